"""Benchmark: parse and store a 5,000-file job log; `durations show` over 100,000 stored measurements.

    .venv/bin/python bench/ingest.py [--pg-url postgresql+psycopg://postgres@127.0.0.1:5432/test] [--no-pg]

Targets: parse >= 200,000 log lines/s; show over 100k measurements < 0.5 s on SQLite.
Anchor (same run): one bare pass over the log's lines (split + a substring test per line); the
parser's time is reported as a ratio to it. Human-readable figures first, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FILE_LINES = 5000
NOISE_PER_FILE = 8
SHOW_ROWS = 100_000
PG_ADMIN_URL = os.environ.get("CI_REGISTRAR_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def make_log(seed: int = 1) -> tuple[str, int]:
    """A job log with FILE_LINES summary lines (some retries), noise, groups and End lines."""
    rng = random.Random(seed)
    t = datetime(2026, 11, 1, tzinfo=timezone.utc)
    out = []

    def line(text):
        nonlocal t
        t += timedelta(milliseconds=rng.randint(1, 900))
        out.append(t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "0Z " + text)

    line("##[group]Run python3 tests/ci/run_suite.py --hw rocm --suite nightly-stage-c-8-gpu-mi350")
    written, index = 0, 0
    while written < FILE_LINES:
        index += 1
        path = f"tests/e2e/group{index % 37}/test_case_{index}.py"
        line(f"::group::{path}")
        attempts = 2 if rng.random() < 0.1 else 1
        for attempt in range(1, attempts + 1):
            for k in range(NOISE_PER_FILE):
                line(rng.choice([
                    f"[rank{k}] step {k} loss={rng.random():.4f} elapsed={rng.random():.2f}s",
                    f"INFO 2026-11-01 worker {k}: allocating {rng.randint(1, 90)} GiB",
                    "Collecting metrics ...",
                    f"\x1b[32mok\x1b[0m shard {k}",
                ]))
            status = "FAIL" if attempt < attempts else rng.choice(["PASS"] * 18 + ["TIMEOUT", "FAIL"])
            extra = " exit=1" if status == "FAIL" else (" exit=-9 timeout_after=1800s" if status == "TIMEOUT" else "")
            retry = f" retry_of=attempt={attempt - 1}" if attempt > 1 else ""
            line(f"[{index}/{FILE_LINES}] {path}  {status}  elapsed={rng.randint(5, 2400)}s{extra}{retry}")
            written += 1
            if written >= FILE_LINES:
                break
        line(f"End ({index - 1}/{FILE_LINES - 1}):")
        line(f"filename='{path}', elapsed={rng.randint(5, 2400)}, _estimated_time={rng.choice([300, 800, 2400])}")
        line("::endgroup::")
    text = "\r\n".join(out) + "\r\n"
    return text, len(out)


def best_of(fn, repeat=5):
    best = float("inf")
    value = None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def anchor(text: str) -> int:
    hits = 0
    for line in text.split("\n"):
        if "elapsed=" in line:
            hits += 1
    return hits


def create_pg_database():
    from sqlalchemy import create_engine, text

    name = f"cireg_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    return admin, name, PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name


def drop_pg_database(admin, name):
    from sqlalchemy import text

    from bot.store.db import get_engine

    get_engine.cache_clear()
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def store_run(url: str, log: str, runs: int = 3) -> float:
    """parse + store of the whole log into a fresh job each time (best of runs)."""
    from bot.durations.ingest import ingest_job_log

    best = float("inf")
    for i in range(runs):
        start = time.perf_counter()
        result = ingest_job_log(url, log, repository="bench/ingest", run_id=1000 + i, job_id=1,
                                runner_labels=["linux-mi35x-gpu-8"])
        best = min(best, time.perf_counter() - start)
        assert result.inserted == FILE_LINES, result.summary()
    again = ingest_job_log(url, log, repository="bench/ingest", run_id=1000, job_id=1)
    assert again.inserted == 0
    return best


def fill(url: str, rows: int) -> None:
    """rows measurements: 1,000 files x 100 runs over 100 days, 90% passing, on two hardware models."""
    import sqlalchemy as sa

    from bot.store.db import get_engine
    from bot.store.measurements import measurements

    rng = random.Random(7)
    now = datetime.now(timezone.utc)
    files = [f"tests/e2e/g{i % 23}/test_{i}.py" for i in range(1000)]
    batch = []
    engine = get_engine(url)
    with engine.begin() as conn:
        for n in range(rows):
            f = files[n % len(files)]
            run = n // len(files)
            batch.append({
                "repository": "bench/show", "file": f, "backend": "rocm",
                "suite": f"nightly-stage-c-{(n % 3 + 1) * 2}-gpu-mi350",
                "hardware": "MI355X" if run % 5 else "unknown", "elapsed_s": float(rng.randint(10, 3000)),
                "outcome": "PASS" if rng.random() < 0.9 else rng.choice(["FAIL", "TIMEOUT"]), "attempt": 1,
                "exit_code": None, "timeout_after_s": None, "est_time": 800.0, "run_id": run, "job_id": 1,
                "head_sha": None, "workflow": "bench", "runner_labels": None, "source": "bench",
                "measured_at": now - timedelta(days=100 * (1 - run / (rows / len(files))), minutes=n % 997),
            })
            if len(batch) == 10_000:
                conn.execute(sa.insert(measurements), batch)
                batch = []
        if batch:
            conn.execute(sa.insert(measurements), batch)
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("ANALYZE measurements")
        else:
            conn.exec_driver_sql("ANALYZE")


def show(url: str) -> tuple[int, str]:
    from bot.durations.query import query_stats

    rows = query_stats(url, repository="bench/show")
    return len(rows), json.dumps([r.as_json() for r in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-pg", action="store_true", help="skip PostgreSQL")
    args = parser.parse_args()

    from bot.store.measurements import ensure_store
    from checks.calibration.job_log import parse_job_log

    log, total_lines = make_log()
    parse_s, parsed = best_of(lambda: parse_job_log(log))
    assert len(parsed.records) == FILE_LINES and not parsed.malformed, (len(parsed.records), parsed.malformed[:3])
    anchor_s, _ = best_of(lambda: anchor(log))
    figures = {
        "log_lines": total_lines,
        "file_lines": FILE_LINES,
        "parse_s": round(parse_s, 5),
        "parse_lines_per_s": round(total_lines / parse_s),
        "parse_file_lines_per_s": round(FILE_LINES / parse_s),
        "anchor_s": round(anchor_s, 5),
        "parse_vs_anchor": round(parse_s / anchor_s, 2),
    }
    print(f"job log: {total_lines} lines, {FILE_LINES} summary lines ({len(log) / 1e6:.1f} MB)")
    print(f"parse:                 {figures['parse_lines_per_s']:>10,} lines/s  ({parse_s * 1000:.1f} ms; "
          f"{figures['parse_vs_anchor']}x a bare split+substring pass, {anchor_s * 1000:.1f} ms)")

    with tempfile.TemporaryDirectory(prefix="cireg-bench-") as tmp:
        sqlite_url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        ensure_store(sqlite_url)
        s = store_run(sqlite_url, log)
        figures["parse_store_sqlite_s"] = round(s, 4)
        figures["parse_store_sqlite_lines_per_s"] = round(total_lines / s)
        print(f"parse+store (SQLite):  {figures['parse_store_sqlite_lines_per_s']:>10,} lines/s  ({s * 1000:.0f} ms)")

        show_url = f"sqlite:///{Path(tmp) / 'show.db'}"
        ensure_store(show_url)
        start = time.perf_counter()
        fill(show_url, SHOW_ROWS)
        fill_s = time.perf_counter() - start
        show_s, (groups, _) = best_of(lambda: show(show_url), repeat=5)
        figures["show_rows"] = SHOW_ROWS
        figures["show_groups"] = groups
        figures["show_sqlite_s"] = round(show_s, 4)
        print(f"show over {SHOW_ROWS:,} measurements (SQLite): {show_s * 1000:.0f} ms for {groups} groups "
              f"(filled in {fill_s:.1f} s)")

    figures["parse_store_pg_s"] = figures["parse_store_pg_lines_per_s"] = figures["show_pg_s"] = None
    if not args.no_pg:
        try:
            admin, name, pg_url = create_pg_database()
        except Exception as exc:  # noqa: BLE001 - a machine without PostgreSQL still gets the SQLite figures
            print(f"PostgreSQL at {PG_ADMIN_URL} not reachable ({exc.__class__.__name__}): skipped")
        else:
            try:
                ensure_store(pg_url)
                s = store_run(pg_url, log)
                figures["parse_store_pg_s"] = round(s, 4)
                figures["parse_store_pg_lines_per_s"] = round(total_lines / s)
                print(f"parse+store (PostgreSQL): {figures['parse_store_pg_lines_per_s']:>7,} lines/s  ({s * 1000:.0f} ms)")
                fill(pg_url, SHOW_ROWS)
                show_s, (groups, _) = best_of(lambda: show(pg_url), repeat=5)
                figures["show_pg_s"] = round(show_s, 4)
                print(f"show over {SHOW_ROWS:,} measurements (PostgreSQL): {show_s * 1000:.0f} ms for {groups} groups")
            finally:
                drop_pg_database(admin, name)

    figures["targets_met"] = {
        "parse_200k_lines_per_s": figures["parse_lines_per_s"] >= 200_000,
        "show_sqlite_under_0_5_s": figures["show_sqlite_s"] < 0.5,
    }
    print("targets: parse >= 200,000 lines/s: " + ("met" if figures["targets_met"]["parse_200k_lines_per_s"] else "MISSED")
          + "; show < 0.5 s on SQLite: " + ("met" if figures["targets_met"]["show_sqlite_under_0_5_s"] else "MISSED"))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

"""The measurements store and ingestion, on SQLite and on the real PostgreSQL at 127.0.0.1:5432."""

from __future__ import annotations

import json
import multiprocessing
import uuid
from datetime import datetime, timedelta, timezone

import pytest
import sqlalchemy as sa

from bot.durations import export, file_format, ingest, query
from bot.store.db import get_engine, session_scope, upgrade
from bot.store.measurements import Measurement, ensure_store, insert_rows
from checks.calibration.estimates import CalibrationParams, duration_stats
from tests.patience import PATIENCE

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    """A store URL with the schema at head; PostgreSQL tests share one database, so each test
    works in its own repository name."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'store.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    ensure_store(url)
    return url


@pytest.fixture()
def repo():
    return f"test/{uuid.uuid4().hex[:10]}"


def _ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%f") + "0Z "


def make_log(files: list[tuple[str, str, float]], *, start: datetime = NOW - timedelta(days=1), est=None, noise=True) -> str:
    """A job log: (file, status, elapsed) per summary line, with noise, a group and End lines."""
    t = start
    lines = [_ts(t) + "##[group]Run python3 tests/ci/run_suite.py --hw rocm --suite stage-c-4-gpu-mi350"]
    seen: dict[str, int] = {}
    for i, (path, status, elapsed) in enumerate(files, 1):
        t += timedelta(seconds=elapsed + 1)
        if noise:
            lines.append(_ts(t) + f"[rank0] step {i} elapsed=0.{i}s loss=0.5")
        retry = f" retry_of=attempt={seen[path]}" if path in seen else ""
        extra = " exit=-9 timeout_after=1800s" if status == "TIMEOUT" else (" exit=1" if status == "FAIL" else "")
        lines.append(_ts(t) + f"[{i}/{len(files)}] {path}  {status}  elapsed={elapsed:g}s{extra}{retry}")
        seen[path] = seen.get(path, 0) + 1
        if est is not None:
            lines.append(_ts(t) + f"End ({i - 1}/{len(files) - 1}):")
            lines.append(_ts(t) + f"filename='{path}', elapsed={elapsed:g}, _estimated_time={est[path]}")
    lines.append(_ts(t) + "##[endgroup]")
    return "\r\n".join(lines) + "\r\n"


def count(url: str, repository: str) -> int:
    with session_scope(url) as s:
        return s.scalar(sa.select(sa.func.count()).select_from(Measurement).where(Measurement.repository == repository))


def rows(url: str, repository: str) -> list[Measurement]:
    with session_scope(url) as s:
        return list(s.scalars(sa.select(Measurement).where(Measurement.repository == repository)
                              .order_by(Measurement.file, Measurement.attempt)))


# ingestion -------------------------------------------------------------------------------------


def test_ingest_job_log_stores_attempts_with_metadata(store, repo):
    log = make_log(
        [("tests/e2e/test_a.py", "PASS", 812), ("tests/e2e/test_b.py", "TIMEOUT", 1800),
         ("tests/e2e/test_b.py", "PASS", 900)],
        est={"tests/e2e/test_a.py": 800, "tests/e2e/test_b.py": 2400},
    )
    result = ingest.ingest_job_log(store, log, repository=repo, run_id=111, job_id=222,
                                runner_labels=["self-hosted", "amd", "mi350", "4gpu"], head_sha="a" * 40,
                                workflow="pr-test-rocm.yml")
    assert (result.parsed, result.inserted, result.duplicates, result.error) == (3, 3, 0, None)
    stored = rows(store, repo)
    assert [(m.file, m.outcome, m.elapsed_s, m.attempt) for m in stored] == [
        ("tests/e2e/test_a.py", "PASS", 812.0, 1),
        ("tests/e2e/test_b.py", "TIMEOUT", 1800.0, 1),
        ("tests/e2e/test_b.py", "PASS", 900.0, 2),
    ]
    first = stored[0]
    assert (first.hardware, first.backend, first.suite, first.est_time) == ("MI355X", "rocm", "stage-c-4-gpu-mi350", 800)
    assert (first.run_id, first.job_id, first.head_sha, first.source) == (111, 222, "a" * 40, "job-log")
    assert first.measured_at.tzinfo is not None and first.measured_at < NOW
    assert stored[1].timeout_after_s == 1800 and stored[1].exit_code == -9


def test_same_job_twice_adds_nothing(store, repo):
    log = make_log([("tests/e2e/test_a.py", "PASS", 10), ("tests/e2e/test_b.py", "PASS", 20)])
    kwargs = dict(repository=repo, run_id=1, job_id=2, runner_labels=["mi350"])
    assert ingest.ingest_job_log(store, log, **kwargs).inserted == 2
    again = ingest.ingest_job_log(store, log, **kwargs)
    assert (again.inserted, again.duplicates) == (0, 2)
    assert count(store, repo) == 2


def test_log_without_ids_is_keyed_by_its_content(store, repo):
    log = make_log([("tests/e2e/test_a.py", "PASS", 10)])
    assert ingest.ingest_job_log(store, log, repository=repo).inserted == 1
    assert ingest.ingest_job_log(store, log, repository=repo).inserted == 0
    other = make_log([("tests/e2e/test_a.py", "PASS", 11)])
    assert ingest.ingest_job_log(store, other, repository=repo).inserted == 1


def test_unknown_hardware_is_stored_as_unknown(store, repo):
    log = make_log([("tests/e2e/test_a.py", "PASS", 10)])
    ingest.ingest_job_log(store, log, repository=repo, run_id=1, job_id=1, runner_labels=["ubuntu-latest"])
    ingest.ingest_job_log(store, log, repository=repo, run_id=1, job_id=2, runner_labels=["linux-mi35x-gpu-8"])
    ingest.ingest_job_log(store, log, repository=repo, run_id=1, job_id=3, runner_labels=["x"], hardware="MI300X")
    assert sorted(m.hardware for m in rows(store, repo)) == ["MI300X", "MI355X", "unknown"]


def test_log_without_summary_lines_imports_nothing_and_says_so(store, repo):
    result = ingest.ingest_job_log(store, "2026-11-01T00:00:00.0000000Z hello\n", repository=repo, run_id=1, job_id=1)
    assert result.inserted == 0 and not result.ok and "no per-file summary lines" in result.error
    assert count(store, repo) == 0


def test_an_error_mid_file_leaves_nothing_written(store, repo, monkeypatch):
    from bot.store import measurements as table

    real = table._insert

    def insert_then_fail(session, batch):
        real(session, batch)
        raise RuntimeError("disk full")

    monkeypatch.setattr(table, "_insert", insert_then_fail)
    with pytest.raises(RuntimeError):
        ingest.ingest_job_log(store, make_log([("tests/e2e/test_a.py", "PASS", 10)]), repository=repo, run_id=1, job_id=1)
    monkeypatch.undo()
    assert count(store, repo) == 0


def test_ingest_in_the_callers_transaction(store, repo):
    log = make_log([("tests/e2e/test_a.py", "PASS", 10)])
    with pytest.raises(KeyError):
        with session_scope(store) as session:
            assert ingest.ingest_job_log(session, log, repository=repo, run_id=1, job_id=1).inserted == 1
            raise KeyError("the caller fails after ingesting")
    assert count(store, repo) == 0
    with session_scope(store) as session:
        ingest.ingest_job_log(session, log, repository=repo, run_id=1, job_id=1)
    assert count(store, repo) == 1


# JSON and CSV ----------------------------------------------------------------------------------


def test_json_import_reports_bad_items_and_is_idempotent(store, repo):
    items = [
        {"repository": repo, "file": "tests/e2e/test_a.py", "elapsed_s": 100, "outcome": "PASS", "run_id": 5,
         "job_id": 6, "measured_at": "2026-11-20T10:00:00Z", "hardware": "MI355X", "est_time": 90},
        {"repository": repo, "file": "tests/e2e/test_a.py", "elapsed": "120s", "status": "fail", "run_id": 5,
         "job_id": 6, "attempt": 2, "measured_at": "2026-11-20T10:30:00.1234567Z"},
        {"repository": repo, "file": "tests/e2e/test_b.py", "elapsed_s": "abc", "outcome": "PASS"},
        {"repository": repo, "file": "tests/e2e/test_b.py", "elapsed_s": 5, "outcome": "MAYBE"},
        "not an object",
    ]
    result = ingest.ingest_json(store, json.dumps(items), name="x.json")
    assert (result.inserted, [n for n, _ in result.malformed]) == (2, [3, 4, 5])
    assert "elapsed_s" in result.malformed[0][1] and "MAYBE" in result.malformed[1][1]
    assert ingest.ingest_json(store, json.dumps({"measurements": items})).inserted == 0
    stored = rows(store, repo)
    assert [(m.outcome, m.elapsed_s, m.attempt, m.hardware) for m in stored] == [
        ("PASS", 100, 1, "MI355X"), ("FAIL", 120, 2, "unknown")]
    assert stored[1].measured_at == datetime(2026, 11, 20, 10, 30, 0, 123456, tzinfo=timezone.utc)


def test_invalid_json_imports_nothing(store, repo):
    assert "not valid JSON" in ingest.ingest_json(store, "[{").error
    assert "must be a list" in ingest.ingest_json(store, '{"a": 1}').error


def test_csv_missing_column_is_named_and_nothing_is_stored(store, repo):
    text = f"repository,file,outcome\n{repo},tests/e2e/test_a.py,PASS\n"
    result = ingest.ingest_csv(store, text, name="x.csv")
    assert result.error == "CSV is missing column: elapsed_s"
    assert count(store, repo) == 0
    both = ingest.ingest_csv(store, "file,status\ntests/a.py,PASS\n")
    assert both.error == "CSV is missing columns: repository, elapsed_s"


def test_csv_malformed_row_has_its_line_number(store, repo):
    text = (
        "file,elapsed_s,outcome,run_id,measured_at\r\n"
        "tests/e2e/test_a.py,10,PASS,1,2026-11-20T10:00:00Z\r\n"
        "tests/e2e/test_b.py,ten,PASS,1,2026-11-20T10:00:00Z\r\n"
        "\r\n"
        "tests/e2e/test_c.py,30,PASS,1,2026-11-20T10:00:00Z,extra\r\n"
        "tests/e2e/test_d.py,40,TIMEOUT,1,2026-11-20T10:00:00Z\r\n"
    )
    result = ingest.ingest_csv(store, text, repository=repo)
    assert result.inserted == 2
    assert [n for n, _ in result.malformed] == [3, 5]


def test_export_then_import_round_trips(store, repo, tmp_path):
    log = make_log([("tests/e2e/test_a.py", "PASS", 10), ("tests/e2e/test_a.py", "PASS", 12)],
                   est={"tests/e2e/test_a.py": 20})
    ingest.ingest_job_log(store, log, repository=repo, runner_labels=["mi350"])
    exported_json = export.export_text(store, "json", repository=repo)
    exported_csv = export.export_text(store, "csv", repository=repo)
    assert ingest.ingest_json(store, exported_json).inserted == 0
    assert ingest.ingest_csv(store, exported_csv).inserted == 0
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    ensure_store(fresh)
    assert ingest.ingest_csv(fresh, exported_csv).inserted == 2
    assert export.export_text(fresh, "json", repository=repo) == exported_json
    assert json.loads(exported_json)[0]["hardware"] == "MI355X"


# statistics ------------------------------------------------------------------------------------


def _job(store, repo, run, when, entries, hardware="MI355X", suite="nightly-stage-c-4-gpu-mi350", est=None):
    items = [
        {"repository": repo, "file": f, "elapsed_s": e, "outcome": o, "run_id": run, "job_id": run,
         "measured_at": when.isoformat(), "hardware": hardware, "suite": suite, "est_time": est}
        for f, o, e in entries
    ]
    result = ingest.ingest_json(store, json.dumps(items))
    assert result.ok, result


def test_stats_over_the_window_of_passing_runs(store, repo):
    values = [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100, 1200]
    for i, v in enumerate(values):  # 12 passing runs, one a day, newest last
        _job(store, repo, i + 1, NOW - timedelta(days=len(values) - i), [("tests/e2e/test_a.py", "PASS", v)], est=500 + i)
    _job(store, repo, 100, NOW - timedelta(hours=1), [("tests/e2e/test_a.py", "FAIL", 5000)])
    _job(store, repo, 101, NOW - timedelta(days=40), [("tests/e2e/test_b.py", "PASS", 50)])
    _job(store, repo, 102, NOW - timedelta(days=2), [("tests/e2e/test_a.py", "PASS", 77)], hardware="unknown")

    stats = query.query_stats(store, repository=repo, now=NOW)
    by_key = {(s.file, s.hardware): s for s in stats}
    assert set(by_key) == {("tests/e2e/test_a.py", "MI355X"), ("tests/e2e/test_a.py", "unknown")}
    a = by_key[("tests/e2e/test_a.py", "MI355X")]
    expected = duration_stats(values[-10:])  # the last 10 passing runs; the FAIL is left out
    assert (a.n, a.median, a.p90, a.max) == tuple(expected)
    assert a.est_time == 511 and a.suite == "nightly-stage-c-4-gpu-mi350"
    assert a.since == NOW - timedelta(days=10)
    assert a.as_json() == {"file": "tests/e2e/test_a.py", "backend": "rocm", "suite": "nightly-stage-c-4-gpu-mi350",
                           "hardware": "MI355X", "n": 10, "median": expected.median, "p90": expected.p90,
                           "max": expected.max}

    narrow = query.query_stats(store, repository=repo, hardware="MI355X", window_runs=3, window_days=5, now=NOW)
    assert [(s.n, s.max) for s in narrow] == [(3, 1200)]
    wide = query.query_stats(store, repository=repo, file="tests/e2e/test_b.py", window_days=60, now=NOW)
    assert [(s.file, s.n) for s in wide] == [("tests/e2e/test_b.py", 1)]
    params = CalibrationParams(window_runs=4, window_days=100)
    assert {s.n for s in query.query_stats(store, repository=repo, hardware="MI355X", params=params, now=NOW)} == {4, 1}
    assert query.query_stats(store, repository=repo, suite="other", now=NOW) == []


def test_latest_est_times_and_history(store, repo):
    _job(store, repo, 1, NOW - timedelta(days=3), [("tests/e2e/test_a.py", "PASS", 10)], est=100)
    _job(store, repo, 2, NOW - timedelta(days=1), [("tests/e2e/test_a.py", "TIMEOUT", 20)], est=150)
    assert query.latest_est_times(store, repo) == {("tests/e2e/test_a.py", "rocm"): 150}
    hist = query.history(store, repo, "tests/e2e/test_a.py")
    assert [(h["outcome"], h["elapsed_s"]) for h in hist] == [("PASS", 10), ("TIMEOUT", 20)]
    assert repo in query.repositories(store)


def test_sqlite_window_query_reads_the_partial_index(tmp_path):
    url = f"sqlite:///{tmp_path / 'plan.db'}"
    ensure_store(url)
    stmt = query.stats_select(repository="a/b", window_runs=10, window_days=30, now=NOW, dialect="sqlite")
    engine = get_engine(url)
    compiled = stmt.compile(engine, compile_kwargs={"literal_binds": True})
    with engine.connect() as conn:
        plan = " ".join(str(r[-1]) for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}"))
    assert "ix_measurements_pass_window" in plan


def test_migration_down_and_up_on_sqlite(tmp_path):
    url = f"sqlite:///{tmp_path / 'mig.db'}"
    upgrade(url)
    upgrade_down = __import__("alembic.command", fromlist=["downgrade"]).downgrade
    from alembic.config import Config

    from bot.store.db import MIGRATIONS_DIR

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url)
    upgrade_down(cfg, "0001_base")
    assert "measurements" not in sa.inspect(get_engine(url)).get_table_names()
    upgrade(url)
    assert "measurements" in sa.inspect(get_engine(url)).get_table_names()


# concurrency -----------------------------------------------------------------------------------


def _worker(url, repo, job_ids, start, results):
    start.wait(PATIENCE)
    inserted = 0
    for job in job_ids:
        log = make_log([(f"tests/e2e/test_{job}_{i}.py", "PASS", 10 + i) for i in range(40)]
                       + [(f"tests/e2e/test_{job}_0.py", "PASS", 9)], noise=False)
        inserted += ingest.ingest_job_log(url, log, repository=repo, run_id=7, job_id=job,
                                              runner_labels=["mi350"]).inserted
        # and the shared files every job touches, in a job of their own
        shared = make_log([(f"tests/e2e/test_shared_{i}.py", "PASS", 5) for i in range(30)], noise=False)
        inserted += ingest.ingest_job_log(url, shared, repository=repo, run_id=8, job_id=1).inserted
    results.put(inserted)


def test_two_processes_ingesting_at_once_lose_and_duplicate_nothing(store, repo):
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    jobs_a = list(range(0, 30))
    jobs_b = list(reversed(range(15, 45)))  # 15..29 overlap, in the opposite order
    procs = [ctx.Process(target=_worker, args=(store, repo, jobs, start, results)) for jobs in (jobs_a, jobs_b)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(2 * PATIENCE)
        assert p.exitcode == 0
    inserted = [results.get(timeout=PATIENCE) for _ in procs]
    expected = 45 * 41 + 30
    assert sum(inserted) == expected and all(i > 0 for i in inserted)
    assert count(store, repo) == expected
    with session_scope(store) as s:
        dupes = s.execute(
            sa.select(Measurement.run_id, Measurement.job_id, Measurement.file, Measurement.attempt)
            .where(Measurement.repository == repo)
            .group_by(Measurement.run_id, Measurement.job_id, Measurement.file, Measurement.attempt)
            .having(sa.func.count() > 1)
        ).all()
    assert dupes == []


def _start_store(url, start, results):
    from bot.store.measurements import ensure_store as worker_ensure

    start.wait(PATIENCE)
    worker_ensure(url)
    results.put("ok")


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_two_processes_creating_a_fresh_store_at_once(backend, tmp_path):
    """Workers that start together on an empty database both come up; the schema is made once."""
    from sqlalchemy import create_engine, text

    from tests.conftest import PG_ADMIN_URL

    admin = name = None
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'fresh' / 'store.db'}"
    else:
        name = f"cireg_fresh_{uuid.uuid4().hex[:10]}"
        admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    try:
        ctx = multiprocessing.get_context("spawn")
        start, results = ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=_start_store, args=(url, start, results)) for _ in range(2)]
        for p in procs:
            p.start()
        start.set()
        for p in procs:
            p.join(PATIENCE)
            assert p.exitcode == 0
        assert [results.get(timeout=PATIENCE) for _ in procs] == ["ok", "ok"]
        engine = create_engine(url)
        assert "measurements" in sa.inspect(engine).get_table_names()
        engine.dispose()
    finally:
        if admin is not None:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


def test_imported_items_follow_the_schema_with_the_runners_spellings(store, repo):
    """The importer's schema (bot.durations.file_format.MeasurementItem): the runner's names and `812s`, a
    spreadsheet's `2.0`, and a clear reason for each value it refuses."""
    items = [
        {"repo": repo, "filename": "tests/e2e/test_a.py", "elapsed": "812s", "status": "pass", "attempt": "2.0",
         "run_id": "7", "backend": "CUDA", "runner_labels": "self-hosted,mi350"},
        {"repository": repo, "file": "tests/e2e/test_b.py", "elapsed_s": -1, "outcome": "PASS"},
        {"repository": repo, "file": "tests/e2e/test_b.py", "elapsed_s": 1, "outcome": "PASS", "attempt": 0},
        {"repository": repo, "file": "tests/e2e/test_b.py", "elapsed_s": 1, "outcome": "PASS", "backend": "tpu"},
        {"repository": repo, "elapsed_s": 1, "outcome": "PASS"},
        {"repository": repo, "file": "tests/e2e/test_b.py", "elapsed_s": 1, "outcome": "PASS", "measured_at": "soon"},
    ]
    result = ingest.ingest_json(store, json.dumps(items))
    assert result.inserted == 1
    reasons = dict(result.malformed)
    assert "elapsed_s -1" in reasons[2] and "attempt 0" in reasons[3] and "tpu" in reasons[4]
    assert "missing" in reasons[5] and "file" in reasons[5] and "measured_at 'soon'" in reasons[6]
    [row] = rows(store, repo)
    assert (row.elapsed_s, row.outcome, row.attempt, row.run_id, row.backend, row.hardware) == \
        (812, "PASS", 2, 7, "cuda", "MI355X")


def test_calibration_reads_merged_code_its_floor_and_its_timeouts(store, repo):
    """query_stats(merged_only) leaves out PR heads' and on-demand runs; floor_stats gives the
    slowest passing run of floor_days and the window's timeouts (docs/calibration.md)."""
    from bot.store.measurements import floor_stats, query_stats

    f = "tests/e2e/test_cal.py"

    def item(i, elapsed, outcome="PASS", days=1, **extra):
        return {"repository": repo, "file": f, "backend": "rocm", "hardware": "MI355X", "elapsed_s": elapsed,
                "outcome": outcome, "run_id": i, "job_id": i, "measured_at": (NOW - timedelta(days=days)).isoformat(), **extra}

    items = [item(i, 600 + i) for i in range(1, 5)]
    items += [item(10, 3000, event="pull_request"), item(11, 2900, source="on-demand:7")]
    items += [item(20, 2600, days=60)]  # outside window_days, inside floor_days
    items += [item(30, 2500, "TIMEOUT", timeout_after_s=2500)]
    result = ingest.ingest_json(store, json.dumps(items))
    assert result.inserted == len(items), result.malformed
    params = CalibrationParams()
    (every,) = query_stats(store, repository=repo, params=params, now=NOW)
    (merged,) = query_stats(store, repository=repo, params=params, now=NOW, merged_only=True)
    assert (every.n, every.max) == (6, 3000) and (merged.n, merged.max) == (4, 604)
    assert sorted(merged.values) == [601, 602, 603, 604]
    extra = floor_stats(store, repository=repo, params=params, now=NOW)[(repo, "MI355X", "rocm", f)]
    assert extra == {"slowest": 2600, "timeouts": 1, "timed_out_at": 2500}
    exported = {r["run_id"]: r["event"] for r in export.export_records(store, repository=repo)}
    assert exported[10] == "pull_request" and exported[1] is None


def test_a_workflow_run_source_of_the_longest_repository_name_is_stored(store):
    """The App stores a workflow run's durations with source `workflow_run:<owner>/<name>`; GitHub
    allows owners of 39 characters and names of 100, so the column holds 153 (PostgreSQL enforces it)."""
    repo = "o" * 39 + "/" + "n" * 90 + uuid.uuid4().hex[:10]
    log = make_log([("tests/e2e/test_a.py", "PASS", 10)])
    result = ingest.ingest_job_log(store, log, repository=repo, run_id=5, job_id=6, source=f"workflow_run:{repo}")
    assert (result.inserted, result.error) == (1, None)
    assert [m.source for m in rows(store, repo)] == [f"workflow_run:{repo}"]


def test_an_elapsed_time_outside_zero_to_seven_days_is_refused_where_it_is_read(store, repo):
    """Nothing non-finite, zero or over a week reaches the store: the log's line or the JSON item says why."""
    f = "tests/e2e/test_bounds.py"
    log = make_log([(f, "PASS", 10)], noise=False).replace("elapsed=10s", "elapsed=" + "9" * 301 + "s")
    log += make_log([("tests/e2e/test_ok.py", "PASS", 12)], noise=False)
    result = ingest.ingest_job_log(store, log, repository=repo, run_id=1, job_id=1)
    assert result.inserted == 1 and len(result.malformed) == 1
    line, reason = result.malformed[0]
    assert "9" * 301 in log.splitlines()[line - 1] and "outside (0 s, 7 days]" in reason
    items = [
        {"repository": repo, "file": f, "elapsed_s": 5, "outcome": "PASS", "run_id": 2, "event": "push", "head_branch": "main"},
        {"repository": repo, "file": f, "elapsed_s": 0, "outcome": "PASS", "run_id": 3},
        {"repository": repo, "file": f, "elapsed_s": 7 * 86400 + 1, "outcome": "PASS", "run_id": 4},
        {"repository": repo, "file": f, "elapsed_s": "NaN", "outcome": "PASS", "run_id": 5},
        {"repository": repo, "file": f, "elapsed_s": "Infinity", "outcome": "PASS", "run_id": 6},
        {"repository": repo, "file": f, "elapsed_s": 9, "outcome": "TIMEOUT", "timeout_after_s": 10 ** 400, "run_id": 7},
        {"repository": repo, "file": f, "elapsed_s": 7 * 86400, "outcome": "PASS", "run_id": 8, "head_repository": "evil/fork"},
    ]
    result = ingest.ingest_json(store, json.dumps(items))
    assert result.inserted == 2
    reasons = dict(result.malformed)
    assert sorted(reasons) == [2, 3, 4, 5, 6]
    assert "outside (0 s, 7 days]" in reasons[2] and "outside (0 s, 7 days]" in reasons[3]
    assert all("elapsed" in reasons[i] or "timeout_after" in reasons[i] for i in reasons)
    exported = {r["run_id"]: (r["event"], r["head_branch"], r["head_repository"], r["elapsed_s"])
                for r in export.export_records(store, repository=repo) if r["file"] == f}
    assert exported == {2: ("push", "main", None, 5), 8: (None, None, "evil/fork", 7 * 86400)}
    with pytest.raises(ValueError, match="not a finite"):  # the store's own last guard
        insert_rows(store, [{**file_format.row_from_item(items[0], {}, None), "elapsed_s": float("inf")}])


def test_migration_0012_deletes_the_values_no_page_may_read(tmp_path):
    """A store written before the ingest bounds may hold `elapsed=<301 digits>s` read as infinity:
    the upgrade deletes every row outside (0 s, 7 days], so no page, check or PR reads one."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade(url, "0010_measurement_source_width")
    with get_engine(url).begin() as conn:
        for i, elapsed in enumerate([float("inf"), 0.0, 7 * 86400 + 1, 812.0]):
            conn.execute(sa.text(
                "INSERT INTO measurements (repository, file, backend, hardware, elapsed_s, outcome, attempt, run_id, job_id,"
                " measured_at, source) VALUES ('a/b', 'tests/t.py', 'rocm', 'MI355X', :e, 'PASS', 1, :i, 1,"
                " '2026-11-29 00:00:00', 'job-log')"), {"e": elapsed, "i": i})
    upgrade(url)
    with get_engine(url).connect() as conn:
        rows = conn.execute(sa.text("SELECT elapsed_s, head_branch, head_repository FROM measurements")).all()
    assert [tuple(r) for r in rows] == [(812.0, None, None)]


def test_a_file_under_a_second_keeps_its_verdict_and_stores_no_duration(store, repo):
    """Runners print whole seconds, so `elapsed=0s` is a file that ran for under one: the parsed
    log keeps its PASS (an on-demand run's verdict), the store gets no 0 s duration, and says why."""
    from checks.calibration.job_log import UNDER_A_SECOND, parse_job_log

    log = make_log([("tests/e2e/test_quick.py", "PASS", 0), ("tests/e2e/test_ok.py", "PASS", 12)], noise=False)
    assert [(r.file, r.status, r.elapsed) for r in parse_job_log(log).records] == [
        ("tests/e2e/test_quick.py", "PASS", 0), ("tests/e2e/test_ok.py", "PASS", 12)]
    assert parse_job_log(log).malformed == []
    result = ingest.ingest_job_log(store, log, repository=repo, run_id=1, job_id=1)
    assert result.inserted == 1
    [(line, reason)] = result.malformed
    assert "test_quick.py" in log.splitlines()[line - 1] and reason == UNDER_A_SECOND
    assert [m.file for m in rows(store, repo)] == ["tests/e2e/test_ok.py"]

"""Benchmark: `make test` on a machine whose cores are all kept busy by other processes.

Starts --busy processes that spin (`python3 -c 'while True: pass'`; default: one per core), then
runs the whole suite (tests/run.sh, as `make test` does) --runs times in a row, and prints each
run's wall time, outcome (pytest's summary line) and the load average; the spinning processes
are killed whatever happens (finished, failed, interrupted). --busy 0 runs on the machine as it is.

The suite is meant to pass every time here: no test depends on the machine's speed
(tests/patience.py). Ends with one JSON line of the figures. Not a timed test: CI does not gate
on it.

    .venv/bin/python bench/suite_under_load.py [--runs 3] [--busy N] [--workers N] [-- pytest args]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed|error).*) in [\d.]+s")


def _spinners(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen(["python3", "-c", "while True: pass"], start_new_session=True) for _ in range(n)]


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _summary(output: str) -> str:
    lines = [m.group(1) for line in output.splitlines() if (m := SUMMARY.match(line.strip()))]
    return lines[-1] if lines else "(no pytest summary)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 1,
                        help="processes that keep a core busy each (default: one per core; 0: none)")
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1), help="pytest-xdist workers")
    parser.add_argument("--log-dir", type=Path, default=ROOT / ".venv" / "suite-under-load",
                        help="each run's whole output, <start time>-run-N.log")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args(argv)
    args.log_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(["bash", "tests/services.sh"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)

    # SIGTERM (a CI job cancelled) ends the spinners as an exception does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    busy = _spinners(args.busy)
    rows = []
    try:
        for i in range(1, args.runs + 1):
            load_before = os.getloadavg()[0]
            log = args.log_dir / f"{time.strftime('%Y%m%dT%H%M%S')}-run-{i}.log"
            started = time.monotonic()
            done = subprocess.run(["bash", "tests/run.sh", str(args.workers), "-q", "-p", "no:cacheprovider",
                                   *args.pytest_args], cwd=ROOT, capture_output=True, text=True)
            took = time.monotonic() - started
            log.write_text(done.stdout + done.stderr)
            row = {"run": i, "seconds": round(took, 1), "exit": done.returncode, "summary": _summary(done.stdout),
                   "load_before": round(load_before, 1), "load_after": round(os.getloadavg()[0], 1)}
            rows.append(row)
            print(f"run {i}: {took / 60:.1f} min, exit {done.returncode}, {row['summary']} "
                  f"(load {row['load_before']} -> {row['load_after']}; {log})", flush=True)
    finally:
        _stop(busy)
    passed = sum(1 for r in rows if r["exit"] == 0)
    print(f"{passed} of {len(rows)} runs passed with {args.busy} busy processes on {os.cpu_count()} cores")
    print(json.dumps({"bench": "suite_under_load", "cores": os.cpu_count(), "busy": args.busy,
                      "workers": args.workers, "runs": rows, "passed": passed}))
    return 0 if passed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())

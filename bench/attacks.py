"""Time each input of tests/fixtures/attacks.py through check_tree, each in its own process with a
wall-clock and address-space cap (so a run that would not end is reported, not waited for).

    python bench/attacks.py [--timeout 30] [--memory-mb 2048] [--root DIR]

--root runs another copy of the code (e.g. an older revision exported with `git archive`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
DIFF_MODE = {"huge_test_file", "dense_test_file"}
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]), int(sys.argv[2])))
from checks.engine import check_tree
from checks.scanning.tree import MemoryTree
from tests.fixtures.attacks import ATTACKS
from tests.fixtures.miles import miles_tree
extra = ATTACKS[sys.argv[1]]()
files = miles_tree(**extra)
start = time.perf_counter()
try:
    if sys.argv[1] in DIFF_MODE:  # a PR's changed files are parsed whole
        report = check_tree(MemoryTree(files), MemoryTree(miles_tree()), {p: None for p in extra})
    else:
        report = check_tree(MemoryTree(files))
    out = {"seconds": time.perf_counter() - start, "rules": sorted({f.rule for f in report.findings})}
except MemoryError:
    out = {"seconds": time.perf_counter() - start, "error": "MemoryError"}
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--memory-mb", type=int, default=2048)
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(here))
    from tests.fixtures.attacks import ATTACKS

    env = dict(os.environ, PYTHONPATH=f"{args.root}{os.pathsep}{here}")
    for name in args.names or ATTACKS:
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-c", CHILD, name, str(args.memory_mb * 1024 * 1024)], env=env, cwd=args.root,
                                  capture_output=True, text=True, timeout=args.timeout)
            line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else json.dumps({"error": (done.stderr.strip().splitlines() or ["?"])[-1][:120]})
        except subprocess.TimeoutExpired:
            line = json.dumps({"error": f"killed after {args.timeout:g} s"})
        print(f"{name:26} {time.perf_counter() - start:7.2f} s wall  {line}", flush=True)


if __name__ == "__main__":
    main()

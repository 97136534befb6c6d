"""Benchmark: the first check of a checkout (no scan cache) and the next one, against the target's
own collector, as whole processes on a real tree.

    python bench/first_run.py --target miles --tree /tmp/miles            # an exported checkout
    python bench/first_run.py --target sglang --git-dir sglang.git --commit HEAD
    python bench/first_run.py --target miles --tree /tmp/miles --regular-install

--regular-install measures a regular install of this checkout (`pip install .` into a new virtual
environment: bytecode compiled, as a user's pip does) instead of the development one; figures
for the docs are taken that way.

With --git-dir the commit is exported as bench/fidelity.py does (for sglang only the directories
its runner reads, plus `.github` with docs/configs/sglang.yml as `.github/ci-registrar.yml`).
Each round runs, in turn: the target's own collector, as is (bench/target_collector.py: miles'
`collect_tests(discover_ci_files())`, sglang's run_suite glob and `collect_tests`), `ci-registrar check --format json` with a new empty
--cache-dir (cold), and the same with the cache the cold run left (warm). Rounds alternate the
three so that a machine whose speed drifts moves them together; figures are per process: wall
time and CPU (user + system, of the process and its children), median with min and max over
--runs rounds, and the ratios engine/collector taken round by round. It also says whether the
cold and warm reports are identical. Ends with one JSON line of the figures. Not a test.

On a shared machine the wall figures follow the load; CPU is steadier. Python's bytecode cache
should be writable (PYTHONDONTWRITEBYTECODE unset), as on a user's machine: otherwise every run
compiles the engine's modules and the collector's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fidelity import TARGETS, export  # noqa: E402
from bench.target_collector import command as collector_command  # noqa: E402


def timed(cmd: list[str], cwd: str | None = None) -> tuple[float, float, str]:
    """Wall and CPU seconds of one whole process (and what it printed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, cpu, done.stdout


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 4), "min": round(min(values), 4), "max": round(max(values), 4)}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=sorted(TARGETS), required=True)
    ap.add_argument("--tree", help="an exported checkout of the target (with its configuration in place)")
    ap.add_argument("--git-dir", help="export --commit from this git directory instead")
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--engine", default=shutil.which("ci-registrar") or str(ROOT / ".venv" / "bin" / "ci-registrar"))
    ap.add_argument("--regular-install", action="store_true", help="time a `pip install .` of this checkout")
    a = ap.parse_args(argv)
    target = TARGETS[a.target]
    work = Path(tempfile.mkdtemp(prefix="first-run-"))
    try:
        if a.regular_install:
            venv = work / "venv"
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", str(ROOT)], check=True)
            a.engine = str(venv / "bin" / "ci-registrar")
        if a.git_dir:
            tree = work / "tree"
            tree.mkdir()
            export(a.git_dir, a.commit, str(tree), target["export"])
            if target["config"]:
                (tree / ".github").mkdir(exist_ok=True)
                (tree / ".github" / "ci-registrar.yml").write_text(target["config"])
        elif a.tree:
            tree = Path(a.tree)
        else:
            ap.error("give --tree or --git-dir")
        collector = collector_command(a.target)
        engine = [a.engine, "check", "--format", "json", "--repo", str(tree)]
        # one round unmeasured (bytecode written, files in the page cache), and the yardstick
        # checked: the target's collector and the engine count the same registrations
        collected = int(timed(collector, cwd=str(tree))[2].strip().splitlines()[-1])
        reported = len(json.loads(timed(engine + ["--no-cache"])[2])["registrations"])
        if collected != reported:
            raise SystemExit(f"the target's collector found {collected} registrations, the engine {reported}")
        rounds = {"collector": [], "cold": [], "warm": []}
        identical = True
        for n in range(a.runs + 1):
            cache = work / f"cache-{n}"
            c = timed(collector, cwd=str(tree))
            cold = timed(engine + ["--cache-dir", str(cache)])
            warm = timed(engine + ["--cache-dir", str(cache)])
            identical = identical and cold[2] == warm[2]
            shutil.rmtree(cache, ignore_errors=True)
            if n:  # the first round warms up
                for name, r in (("collector", c), ("cold", cold), ("warm", warm)):
                    rounds[name].append(r[:2])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = {"target": a.target, "tree": str(tree) if a.tree else f"{a.git_dir}@{a.commit}", "runs": a.runs,
           "registrations": collected, "regular_install": a.regular_install,
           "cold_and_warm_reports_identical": identical}
    print(f"{a.target}: {out['tree']}, {a.runs} alternated rounds (median, min .. max)")
    for name, values in rounds.items():
        for i, what in ((0, "wall_s"), (1, "cpu_s")):
            s = spread([v[i] for v in values])
            out[f"{name}_{what}"] = s
            print(f"  {name:9s} {what:6s} {s['median']:8.3f}  ({s['min']:.3f} .. {s['max']:.3f})")
    for name in ("cold", "warm"):
        for i, what in ((0, "wall"), (1, "cpu")):
            s = spread([e[i] / c[i] for e, c in zip(rounds[name], rounds["collector"])])
            out[f"{name}_over_collector_{what}"] = s
            print(f"  {name}/collector {what:4s} {s['median']:.3f}  ({s['min']:.3f} .. {s['max']:.3f})")
    print(f"  cold and warm reports identical: {'yes' if identical else 'no'}")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()

"""Benchmark: months of weekly est_time calibrations replayed over synthetic GPU-CI durations.

    .venv/bin/python bench/calibration.py [--weeks 26] [--seed 16]

Each week every file runs `RUNS_PER_WEEK` times on MI355X (and its CUDA twin on H200, stored in
the same measurements: the window must leave them out). A run takes its true duration that week;
the runner kills it after max(timeout_per_file, int(1.25 x est_time in force)) seconds, and the
store then holds a TIMEOUT, as the real runner's log would say. Once a week each policy recomputes
est_time from the same store and the values it writes are in force the next week.

Duration shapes (what real GPU CI shows):
- steady files (a few % noise);
- bimodal files: a fast mode and a slow one (sglang's 300 s / 13 s case, and a long 1500 s / 2600 s
  e2e test whose slow mode is a cold model cache);
- slow drift (+2 % a week);
- a regression: +25 % from week 9 on;
- flaky retries: attempt 1 FAILs part-way, attempt 2 passes (both stored);
- hangs: 0.5 % of runs never finish; they time out whatever est_time says (counted apart);
- H200 runs of the same files at 0.6x, in the same store.

Policies, on the same replay:
- `ours`: checks/calibration/policy.py (REG020's window and tolerance, never below a passing run x
  max_margin, no decrease after a timeout);
- `p90-only`: sglang's weekly script (scripts/ci/update_est_time.py): est_time = the p90 of the
  window, written whenever it differs;
- `p90 x margin`: the same with REG020's margin (1.15), for reference.

Figures: runs the est_time in force timed out (hangs excluded), est_time changes per week
(churn), GPU-hours reserved (sum of est_time x GPUs over every run, the sharding and budget view)
and GPU-hours actually run. Then, apart, a 1.6x step regression no history-based policy can foresee.
Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from checks.calibration.policy import build_windows, decide  # noqa: E402
from checks.config.schema import Calibration  # noqa: E402
from checks.calibration.estimates import duration_stats, runner_timeout  # noqa: E402
from checks.model import Argument, Backend, Registration, Span  # noqa: E402

RUNS_PER_WEEK = 7
START = datetime(2026, 3, 2, tzinfo=timezone.utc)
PARAMS = Calibration()


@dataclass
class FileModel:
    name: str
    gpus: int
    kind: str
    base: float  # seconds, week 0 (the fast mode for bimodal files)
    slow: float = 0.0  # bimodal: the slow mode
    slow_p: float = 0.0
    noise: float = 0.04

    def duration(self, week: int, rng: random.Random) -> float:
        mu = self.base
        if self.kind == "drift":
            mu *= 1.02 ** week
        if self.kind == "regression" and week >= 9:
            mu *= 1.25
        if self.kind == "step" and week >= 9:
            mu *= 1.6
        if self.kind == "bimodal" and rng.random() < self.slow_p:
            mu = self.slow
        return max(1.0, rng.gauss(mu, mu * self.noise))


def files(rng: random.Random, step: bool = False) -> list[FileModel]:
    out = []
    for i in range(24):
        out.append(FileModel(f"tests/e2e/steady/test_steady_{i}.py", rng.choice([1, 2, 4, 8]), "steady", rng.uniform(60, 2400)))
    out.append(FileModel("tests/e2e/test_bimodal_short.py", 1, "bimodal", 13, 300, 0.15))
    for i in range(4):
        out.append(FileModel(f"tests/e2e/test_bimodal_long_{i}.py", 8, "bimodal", rng.uniform(1400, 1600), rng.uniform(2500, 2700), 0.12))
    for i in range(6):
        out.append(FileModel(f"tests/e2e/drift/test_drift_{i}.py", 4, "drift", rng.uniform(900, 2000)))
    for i in range(3):
        out.append(FileModel(f"tests/e2e/test_regression_{i}.py", 8, "regression", rng.uniform(1500, 2200)))
    if step:
        out.append(FileModel("tests/e2e/test_step_regression.py", 8, "step", 1800))
    return out


def registration(file: str, est_time: float) -> Registration:
    span = Span(1, 27, 1, 27 + len(str(est_time)))
    return Registration(file, "register_rocm_ci", Backend.ROCM, span, (1, 1),
                        {"est_time": Argument("est_time", est_time, True, span, str(est_time)),
                         "suite": Argument("suite", "nightly-stage-c-8-gpu-mi350", True, span, '"nightly-stage-c-8-gpu-mi350"')})


def ours(est: float, window, _file: str) -> float:
    d = decide(registration(_file, est), window, PARAMS)
    return d.new if d.changed else est


def p90_only(est: float, window, _file: str, margin: float = 1.0) -> float:
    if window is None or len(window.passing) < 1:
        return est
    p90 = duration_stats(window.passing).p90
    return int(math.ceil(p90 * margin))


POLICIES = {
    "ours": ours,
    "p90-only": p90_only,
    "p90 x margin": lambda est, w, f: p90_only(est, w, f, PARAMS.margin),
}


def replay(models: list[FileModel], weeks: int, seed: int) -> dict[str, dict]:
    results = {}
    for name, policy in POLICIES.items():
        rng = random.Random(seed)  # the same runs for every policy
        est = {m.name: m.base * 2 for m in models}  # a first guess, as hand-written est_times are
        records: list[dict] = []
        timed_out = hangs = changes = 0
        reserved = used = 0.0
        per_week = []
        run_id = 0
        for week in range(weeks):
            for k in range(RUNS_PER_WEEK):
                at = START + timedelta(days=7 * week + k, hours=3)
                run_id += 1
                for m in models:
                    true = m.duration(week, rng)
                    hang = rng.random() < 0.005
                    flaky = rng.random() < 0.05
                    limit = runner_timeout(est[m.name], PARAMS.timeout_per_file_s)
                    reserved += est[m.name] * m.gpus / 3600
                    attempt = 1
                    if flaky:
                        part = true * rng.uniform(0.2, 0.8)
                        records.append(_record(m, part, "FAIL", at, run_id, attempt))
                        used += part * m.gpus / 3600
                        attempt = 2
                    if hang or true > limit:
                        hangs += hang
                        timed_out += (not hang)
                        records.append(_record(m, limit, "TIMEOUT", at, run_id, attempt))
                        used += limit * m.gpus / 3600
                    else:
                        records.append(_record(m, true, "PASS", at, run_id, attempt))
                        used += true * m.gpus / 3600
                    # the CUDA twin on H200: same file, other hardware, never part of the window
                    records.append({**_record(m, true * 0.6, "PASS", at, run_id, 1), "backend": "cuda", "hardware": "H200"})
            # the weekly calibration, on the store as it stands
            now = START + timedelta(days=7 * (week + 1))
            windows = build_windows(records, PARAMS, now=now)
            changed = 0
            for m in models:
                new = policy(est[m.name], windows.get((m.name, Backend.ROCM)), m.name)
                if new != est[m.name]:
                    changed += 1
                    est[m.name] = new
            changes += changed
            per_week.append(changed)
            records = [r for r in records if r["measured_at"] >= now - timedelta(days=PARAMS.floor_days + 7)]
        results[name] = {"timed_out": timed_out, "hangs": hangs, "changes": changes, "churn_per_week": changes / weeks,
                         "churn_max_week": max(per_week), "gpu_hours_reserved": reserved, "gpu_hours_run": used}
    return results


def _record(m: FileModel, elapsed: float, outcome: str, at: datetime, run_id: int, attempt: int) -> dict:
    return {"file": m.name, "backend": "rocm", "hardware": "MI355X", "elapsed_s": round(elapsed, 1), "outcome": outcome,
            "attempt": attempt, "measured_at": at, "run_id": run_id, "source": "workflow_run:bench"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weeks", type=int, default=26)
    ap.add_argument("--seed", type=int, default=16)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    models = files(rng)
    results = replay(models, args.weeks, args.seed)
    step = replay(files(random.Random(args.seed), step=True), args.weeks, args.seed)
    runs = args.weeks * RUNS_PER_WEEK * len(models)
    print(f"{len(models)} files x {RUNS_PER_WEEK} MI355X runs a week x {args.weeks} weeks = {runs} runs "
          f"(plus as many H200 runs in the same store), weekly calibration, seed {args.seed}")
    print(f"{'policy':<14} {'timed out':>9} {'hangs':>6} {'changes':>8} {'per week':>9} {'max/week':>9} "
          f"{'GPU-h reserved':>15} {'GPU-h run':>10}")
    for name, r in results.items():
        print(f"{name:<14} {r['timed_out']:>9} {r['hangs']:>6} {r['changes']:>8} {r['churn_per_week']:>9.2f} "
              f"{r['churn_max_week']:>9} {r['gpu_hours_reserved']:>15.0f} {r['gpu_hours_run']:>10.0f}")
    print("with one more file that regresses 1.6x at week 9 (beyond any est_time learnt from its past):")
    for name, r in step.items():
        print(f"  {name:<12} timed out {r['timed_out']}")
    print(json.dumps({"bench": "calibration", "weeks": args.weeks, "seed": args.seed, "files": len(models), "runs": runs,
                      "policies": {k: {kk: (round(vv, 2) if isinstance(vv, float) else vv) for kk, vv in v.items()} for k, v in results.items()},
                      "step_regression_timed_out": {k: v["timed_out"] for k, v in step.items()}}))


if __name__ == "__main__":
    main()

"""Attacks on a running App: the time an ordinary PR's check takes while each attack runs, and the
serving process's peak memory.

`ci-registrar serve` (the embedded default: SQLite, 4 worker threads, each analysis in a child
process with its 60 s / 1 GiB caps) runs as a real process against the GitHub simulator. For each
input of tests/fixtures/attacks.py, an attacker's installation opens three pull requests carrying
it (more than one thread's worth), then an ordinary repository opens one; plus a poison delivery,
and the on-demand attack from another installation: a read-only user's PR of 20 padded test files
(`--pad-kb` each) and six `/run-rocm` comments on it, whose selections read every file.
Anchor: the same ordinary check with no attack running, measured first in the same run.

    .venv/bin/python bench/adversarial.py [--attacks NAME ...] [--pad-kb KB] [--outage-s S]
        [--fairness-repeat N [--fairness-pad-kb KB] [--fairness-unshared] [--only-fairness]]

Targets: the ordinary check completes within 5 s of its delivery under every attack; the serving
process stays under 1 GB.

Fair analysis (--fairness-repeat N, issue 23): the on-demand attack of 20 files of 574 KiB and
six commands, N times with each file's registration before its padding and N times after it, each
beside an ordinary check of another installation; figures are that check's time and its ratio to
the same check alone (N times on the same `serve`), as median (min..max). --fairness-unshared
measures the same with the analysis slots not shared (the behaviour before bot/analysis/slots.py).
Target: the ordinary check within 5 s.

Then the Redis outage: `serve` with REDIS_URL through a TCP proxy in front of the real Redis
(CI_REGISTRAR_TEST_REDIS, else redis://127.0.0.1:6379/0), two worker threads, the path cut for
--outage-s (30 s) twice: connections reset (drop) and held open carrying nothing (stall).
Deliveries before, during (refused 503) and after it, plus the redelivery of those refused;
/readyz asked every 0.2 s. Targets: every accepted delivery processed exactly once; no /readyz
answer untrue (200 while cut, 503 while up). `--outage-s 0` skips it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_S = 5.0
TARGET_MB = 1024.0


def main(argv=None) -> dict:
    from bot.worker.handlers.pull_requests import CHECK_NAME
    from tests.adversarial_support import ALL_ATTACKS, ONDEMAND_ATTACK, Arena
    from tests.simulator import GitHubSimulator
    from tests.service_support import wait_for

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attacks", nargs="*", default=ALL_ATTACKS + [ONDEMAND_ATTACK])
    parser.add_argument("--pad-kb", type=int, default=3500, help="KiB of padding per test file of the on-demand attack")
    parser.add_argument("--outage-s", type=float, default=30.0, help="Redis outage length; 0 skips it")
    parser.add_argument("--fairness-repeat", type=int, default=0,
                        help="Fair analysis: the on-demand attack this many times in each variant, each beside an "
                             "ordinary check of another installation, against that check alone; 0 skips it")
    parser.add_argument("--fairness-pad-kb", type=int, default=574, help="KiB of padding per file in that measurement")
    parser.add_argument("--fairness-unshared", action="store_true",
                        help="Also measure with the slots not shared (CI_REGISTRAR_ANALYSIS_SLOTS=64): the old behaviour")
    parser.add_argument("--only-fairness", action="store_true", help="Run the fairness measurement only")
    args = parser.parse_args(argv)
    fairness = []
    if args.fairness_repeat > 0:
        configs = [("shared slots", {})] + ([("unshared (slots=64)", {"CI_REGISTRAR_ANALYSIS_SLOTS": 64})]
                                            if args.fairness_unshared else [])
        fairness = [ondemand_fairness(name, env, args.fairness_repeat, args.fairness_pad_kb) for name, env in configs]
        for f in fairness:
            print(f"fair analysis, {f['config']}: ordinary check alone {f['alone_s']['median']:.3f} s "
                  f"({f['alone_s']['min']:.3f}..{f['alone_s']['max']:.3f})")
            for v in f["variants"]:
                print(f"  beside the on-demand attack ({f['files']} files of {f['pad_kb']} KiB, {f['commands']} commands, "
                      f"registration {v['registration']}): {v['ordinary_s']['median']:.3f} s "
                      f"({v['ordinary_s']['min']:.3f}..{v['ordinary_s']['max']:.3f}), ratio to alone "
                      f"{v['ratio']['median']:.2f} ({v['ratio']['min']:.2f}..{v['ratio']['max']:.2f}); "
                      f"target {TARGET_S} s: {'met' if v['ordinary_s']['max'] <= TARGET_S else 'MISSED'}")
    if args.only_fairness:
        result = {"bench": "adversarial", "fairness": fairness}
        print(json.dumps(result))
        return result
    sim = GitHubSimulator().start()
    with tempfile.TemporaryDirectory() as tmp:
        arena = Arena(sim, Path(tmp))
        try:
            # The anchor: an ordinary check with nothing else running (twice: the first warms caches).
            anchors = [arena.anchor_s() for _ in range(2)]
            anchor = anchors[-1]
            rows = []
            for attack in args.attacks:
                outcome = (arena.ondemand_attack(pad_bytes=args.pad_kb * 1024) if attack == ONDEMAND_ATTACK
                           else arena.run(attack))
                reasons = sorted({("REG902" if any("REG902" in a.get("title", "") + a["message"]
                                                   for a in r["annotations"]) else r["output"].get("title", "")[:40])
                                  for r in outcome.attack_runs}) or [str(list(outcome.deliveries.values())[0])]
                if attack == ONDEMAND_ATTACK:  # the replies to the six commands
                    reasons = sorted({r["output"]["summary"].split(":")[0].split(" ", 1)[-1][:48] for r in outcome.attack_runs})
                rows.append({"attack": attack, "ordinary_s": round(outcome.ordinary_s, 3) if outcome.ordinary_s else None,
                             "ratio": round(outcome.ordinary_s / anchor, 2) if outcome.ordinary_s else None,
                             "peak_rss_mb": round(outcome.peak_rss_mb, 1), "attacker_verdicts": reasons,
                             "in_progress": sum(1 for r in outcome.attack_runs if r["status"] != "completed")})
        finally:
            arena.close()
            sim.stop()
    print(f"anchor: an ordinary check with no attack: {anchor:.3f} s (cold {anchors[0]:.3f} s)")
    print(f"{'attack':26} {'ordinary check':>15} {'x anchor':>9} {'peak RSS':>10}  attacker's check runs")
    for r in rows:
        shown = f"{r['ordinary_s']:.3f} s" if r["ordinary_s"] is not None else "NOT DONE"
        print(f"{r['attack']:26} {shown:>15} {r['ratio'] or 0:>9.2f} {r['peak_rss_mb']:>7.1f} MB  "
              f"{', '.join(r['attacker_verdicts'])}{' (%d in progress)' % r['in_progress'] if r['in_progress'] else ''}")
    worst = max((r["ordinary_s"] or float("inf")) for r in rows)
    peak = max(r["peak_rss_mb"] for r in rows)
    print(f"worst ordinary check {worst:.3f} s (target {TARGET_S} s: {'met' if worst <= TARGET_S else 'MISSED'}); "
          f"peak RSS {peak:.1f} MB (target {TARGET_MB:.0f} MB: {'met' if peak < TARGET_MB else 'MISSED'})")
    outages = [redis_outage(kind, args.outage_s) for kind in ("drop", "stall")] if args.outage_s > 0 else []
    for o in outages:
        # tracked: every delivery accepted (202) at some point, or whose refused write reached Redis
        # late (its redelivery answered 200 "duplicate")
        print(f"redis outage ({o['kind']}, {o['outage_s']:.0f} s): {o['refused']} deliveries refused with 503 during "
              f"it (redelivered: {o['redelivered']}); processed exactly once: {o['processed_once']}/{o['tracked']}, "
              f"twice or more: {o['processed_twice_or_more']}; /readyz {o['readyz_answers']} answers, "
              f"{o['readyz_503_while_cut']} x 503 while cut, {o['readyz_lies']} untrue, slowest {o['readyz_max_s']} s; "
              f"ready again {o['ready_again_s']} s and all done {o['drained_s']} s after the cut ended")
    result = {"bench": "adversarial", "anchor_s": round(anchor, 3), "worst_ordinary_s": round(worst, 3),
              "worst_ratio": round(worst / anchor, 2), "peak_rss_mb": round(peak, 1), "target_s": TARGET_S,
              "target_mb": TARGET_MB, "attacks": rows, "redis_outages": outages, "fairness": fairness}
    print(json.dumps(result))
    return result


def _spread(values) -> dict:
    import statistics

    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3),
            "n": len(values)}


def ondemand_fairness(config: str, env: dict, repeat: int, pad_kb: int, files: int = 20, commands: int = 6) -> dict:
    """Issue 23's measurement: an ordinary check of one installation while another attacks through
    /run-rocm (`files` files of `pad_kb` KiB, `commands` commands), `repeat` times with the
    registration before the padding and `repeat` times after it, against the same check alone
    (`repeat` times, after one cold run), on a fresh `serve` with `env`."""
    from tests.adversarial_support import Arena
    from tests.simulator import GitHubSimulator
    from tests.service_support import wait_for

    sim = GitHubSimulator().start()
    with tempfile.TemporaryDirectory() as tmp:
        arena = Arena(sim, Path(tmp), **env)
        try:
            def alone() -> float:
                pr = arena.ordinary_pr()
                started = time.monotonic()
                arena.service.deliver(sim, arena.opened(arena.miles, pr))
                assert wait_for(lambda: arena.completed(arena.miles, pr.head_sha), patience=120)
                return time.monotonic() - started

            alone()  # cold: caches warm up
            alone_s = [alone() for _ in range(repeat)]
            variants = []
            for last in (False, True):
                took = []
                for _ in range(repeat):
                    outcome = arena.ondemand_attack(files=files, pad_bytes=pad_kb * 1024, commands=commands,
                                                    register_last=last)
                    took.append(outcome.ordinary_s if outcome.ordinary_s is not None else float("inf"))
                anchor = _spread(alone_s)["median"]
                variants.append({"registration": "last" if last else "first", "ordinary_s": _spread(took),
                                 "ratio": _spread([t / anchor for t in took])})
        finally:
            arena.close()
            sim.stop()
    return {"config": config, "files": files, "pad_kb": pad_kb, "commands": commands, "alone_s": _spread(alone_s),
            "variants": variants}


def redis_outage(kind: str, seconds: float) -> dict:
    """One Redis outage of `kind` (drop | stall) under `serve`, on its own simulator and queue name."""
    import os
    import uuid

    import redis

    from tests.outage_support import RedisOutage
    from tests.simulator import GitHubSimulator

    url = os.environ.get("CI_REGISTRAR_TEST_REDIS", "redis://127.0.0.1:6379/0")
    name = f"cireg-bench-{uuid.uuid4().hex[:10]}"
    sim = GitHubSimulator().start()
    with tempfile.TemporaryDirectory() as tmp:
        # The default job lease (60 s): a claim that reached Redis late waits it out.
        rig = RedisOutage(sim, Path(tmp), url, name, threads=2)
        try:
            out = rig.run(kind, seconds)
        finally:
            rig.close()
            sim.stop()
            client = redis.Redis.from_url(url)
            for key in client.scan_iter(f"*{name}*"):
                client.delete(key)
            client.close()
    redelivered = {}
    for status in out.redelivered.values():
        redelivered[str(status)] = redelivered.get(str(status), 0) + 1
    cut = [r for r in out.readyz if r[0] == r[1] != "up"]
    return {"kind": kind, "outage_s": seconds, "accepted": len(out.accepted), "refused": len(out.refused),
            "redelivered": redelivered, "tracked": len(out.processed),
            "processed_once": sum(1 for n in out.processed.values() if n == 1),
            "processed_twice_or_more": sum(1 for n in out.processed.values() if n > 1),
            "not_done": sum(1 for s in out.states.values() if s != "done"),
            "check_runs_per_head_max": max(out.runs_per_head.values(), default=0),
            "readyz_answers": len(out.readyz), "readyz_503_while_cut": sum(1 for r in cut if r[2] == 503),
            "readyz_lies": len(out.lies()), "readyz_max_s": max((r[3] for r in out.readyz), default=None),
            "ready_again_s": out.ready_again_s, "drained_s": out.drained_s, "left_in_queue": out.left_in_queue}


if __name__ == "__main__":
    main()

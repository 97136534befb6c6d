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

Targets: the ordinary check completes within 5 s of its delivery under every attack; the serving
process stays under 1 GB.

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
    from bot.handlers.pull_requests import CHECK_NAME
    from tests.adversarial_support import ALL_ATTACKS, ONDEMAND_ATTACK, Arena
    from tests.simulator import GitHubSimulator
    from tests.test_service_support import wait_for

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attacks", nargs="*", default=ALL_ATTACKS + [ONDEMAND_ATTACK])
    parser.add_argument("--pad-kb", type=int, default=3500, help="KiB of padding per test file of the on-demand attack")
    parser.add_argument("--outage-s", type=float, default=30.0, help="Redis outage length; 0 skips it")
    args = parser.parse_args(argv)
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
              "target_mb": TARGET_MB, "attacks": rows, "redis_outages": outages}
    print(json.dumps(result))
    return result


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

"""Attacks on a running App: the time an ordinary PR's check takes while each attack runs, and the
serving process's peak memory.

`ci-registrar serve` (the embedded default: SQLite, 4 worker threads, each analysis in a child
process with its 60 s / 1 GiB caps) runs as a real process against the GitHub simulator. For each
input of tests/fixtures/attacks.py, an attacker's installation opens three pull requests carrying
it (more than one thread's worth), then an ordinary repository opens one; plus a poison delivery,
and the on-demand attack from another installation: a read-only user's PR of 20 padded test files
(`--pad-kb` each) and six `/run-rocm` comments on it, whose selections read every file.
Anchor: the same ordinary check with no attack running, measured first in the same run.

    .venv/bin/python bench/adversarial.py [--attacks NAME ...] [--pad-kb KB]

Targets: the ordinary check completes within 5 s of its delivery under every attack; the serving
process stays under 1 GB.
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
    args = parser.parse_args(argv)
    sim = GitHubSimulator().start()
    with tempfile.TemporaryDirectory() as tmp:
        arena = Arena(sim, Path(tmp))
        try:
            # The anchor: an ordinary check with nothing else running (twice: the first warms caches).
            anchors = []
            for _ in range(2):
                pr = arena.ordinary_pr()
                started = time.monotonic()
                arena.service.deliver(sim, arena.opened(arena.miles, pr))
                wait_for(lambda: arena.completed(arena.miles, pr.head_sha), timeout=60)
                anchors.append(time.monotonic() - started)
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
    result = {"bench": "adversarial", "anchor_s": round(anchor, 3), "worst_ordinary_s": round(worst, 3),
              "worst_ratio": round(worst / anchor, 2), "peak_rss_mb": round(peak, 1), "target_s": TARGET_S,
              "target_mb": TARGET_MB, "attacks": rows}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()

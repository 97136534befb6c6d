"""Fidelity: does the engine see what the target's own runner collects, and accept what it accepts?

For each commit of a target repository (a local clone or bare git directory):
  1. export the tree (`git archive COMMIT | tar -x`) into a temporary directory;
  2. run the target's own collector in a child process (bench/fidelity_collector.py: it imports
     the target's register module and runner and calls the runner's own discovery and
     `collect_tests`, statically; no test runs);
  3. run `ci-registrar check --repo TREE --format json` in a child process (for targets whose
     layout is not the engine's default, a `.github/ci-registrar.yml` is written into the export:
     the CLI has no --config option);
  4. compare the registrations, keyed by (file, backend, suite, est_time): agreed, only-target,
     only-engine; and list the engine's failure-level findings. Where the target's runner
     accepted the commit (it ran CI on it), every one of those is a false failure.
On the newest commit visited it also times both whole processes (best of --repeat).

Prints a table per commit and ends with ONE JSON line of the figures. `--details FILE` writes
every disagreement (with examples) as JSON. Not a test: it needs a clone of the target.

Examples:
    python bench/fidelity.py --target miles --git-dir /path/to/miles.git --commits 110e7c9 31f1ca9
    python bench/fidelity.py --target miles --git-dir miles.git --every 5 --since 2026-04-01 --touching tests/ci
    python bench/fidelity.py --target sglang --git-dir sglang.git --commits HEAD 7c90840
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLLECTOR = ROOT / "bench" / "fidelity_collector.py"

sys.path.insert(0, str(ROOT))
from tests.fixtures.sglang import SGLANG_CONFIG  # noqa: E402  (the configuration the tests check with)

TARGETS = {
    "miles": {
        "runner": "tests/ci/run_suite.py",
        "register_module": "tests/ci/ci_register.py=tests.ci.ci_register",
        "export": None,  # the whole tree
        "config": None,  # the engine's defaults are written for miles
    },
    "sglang": {
        "runner": "test/run_suite.py",
        "register_module": "python/sglang/test/ci/ci_register.py=sglang.test.ci.ci_register",
        # the runner reads only test/, python/sglang/test/ci and (until June 2026) the JIT kernel
        # tests and benchmarks under python/sglang/jit_kernel; the engine also reads workflows
        "export": ["test", "python/sglang/test/ci", "python/sglang/jit_kernel", ".github"],
        "config": SGLANG_CONFIG,
    },
}


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True).stdout


def pick_commits(a) -> list[str]:
    if a.commits:
        return [git(a.git_dir, "rev-parse", "--short=9", c + "^{commit}").strip() for c in a.commits]
    cmd = ["log", "--first-parent", "--format=%h", "--abbrev=9", a.branch]
    if a.since:
        cmd.append(f"--since={a.since}")
    if a.until:
        cmd.append(f"--until={a.until}")
    if a.touching:
        cmd += ["--", *a.touching]
    commits = git(a.git_dir, *cmd).split()
    picked = commits[:: a.every]
    return list(reversed(picked))


def export(git_dir: str, commit: str, dest: str, paths: list[str] | None) -> None:
    cmd = ["git", "--git-dir", git_dir, "archive", commit]
    if paths:
        present = [p for p in paths if git(git_dir, "ls-tree", commit, p).strip()]
        cmd += present
    archive = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", dest], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise RuntimeError(f"git archive {commit} failed")


def engine_cmd(a) -> list[str]:
    exe = a.engine or shutil.which("ci-registrar") or str(ROOT / ".venv" / "bin" / "ci-registrar")
    return [exe, "check", "--format", "json", "--repo"]


def run_collector(target: dict, tree: str, timing_only: bool = False) -> tuple[dict, float]:
    cmd = [sys.executable, str(COLLECTOR), "--runner", target["runner"], "--register-module", target["register_module"]]
    if timing_only:
        cmd.append("--timing-only")
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        return {"collector_error": p.stderr[-3000:], "registrations": [], "errors": [], "accepted": False}, dt
    return json.loads(p.stdout.strip().splitlines()[-1]), dt


def run_engine(a, tree: str) -> tuple[dict, float]:
    t0 = time.perf_counter()
    p = subprocess.run(engine_cmd(a) + [tree], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    try:
        return json.loads(p.stdout), dt
    except json.JSONDecodeError:
        return {"engine_error": (p.stderr or p.stdout)[-3000:], "registrations": [], "findings": []}, dt


def key(r: dict) -> tuple:
    return (r["file"], r["backend"], r["suite"], float(r["est_time"]) if isinstance(r.get("est_time"), (int, float)) else r.get("est_time"))


def compare(target_out: dict, engine_out: dict) -> dict:
    t = collections.Counter(key(r) for r in target_out["registrations"])
    e = collections.Counter(key(r) for r in engine_out["registrations"] if r.get("change") != "removed")
    agreed = t & e
    only_t = t - e
    only_e = e - t
    n_agreed = sum(agreed.values())
    n_t, n_e = sum(t.values()), sum(e.values())
    union = n_agreed + sum(only_t.values()) + sum(only_e.values())
    # why each only-target registration is missing: explain by what the engine has for that file
    eng_by_file = collections.defaultdict(list)
    for k in e:
        eng_by_file[k[0]].append(k)
    implicit = {(r["file"], r["backend"], r["suite"], float(r["est_time"])) for r in target_out["registrations"] if r.get("implicit")}
    why = collections.Counter()
    for k in only_t:
        if k in implicit:
            why["implicit CPU registration"] += only_t[k]
        elif any(x[1] == k[1] for x in eng_by_file.get(k[0], [])):
            why["same file and backend, other suite or est_time"] += only_t[k]
        elif eng_by_file.get(k[0]):
            why[f"backend `{k[1]}` not seen by the engine"] += only_t[k]
        else:
            why[f"file not read by the engine ({k[1]})"] += only_t[k]
    # the same without the target's implicit registrations (tests/fast files without a call; the
    # engine's JSON lists them since they were made part of the report, flagged `implicit`)
    n_implicit = sum(only_t[k] for k in only_t if k in implicit)
    union_x = union - n_implicit
    failures = [f for f in engine_out["findings"] if f["severity"] == "failure"]
    by_rule = collections.Counter(f["rule"] for f in failures)
    examples = collections.defaultdict(list)
    for f in failures:
        if len(examples[f["rule"]]) < 3:
            examples[f["rule"]].append(f"{f['file']}:{f['line']}: {f['message'][:240]}")
    kinds = collections.Counter(kind(f) for f in failures)
    return {
        "target": n_t,
        "engine": n_e,
        "agreed": n_agreed,
        "only_target": sum(only_t.values()),
        "only_engine": sum(only_e.values()),
        "agreement_pct": round(100.0 * n_agreed / union, 1) if union else 100.0,
        "agreement_pct_explicit": round(100.0 * n_agreed / union_x, 1) if union_x else 100.0,
        "only_target_why": dict(why),
        "only_target_examples": [list(k) for k in sorted(only_t)[:8]],
        "only_engine_examples": [list(k) for k in sorted(only_e)[:8]],
        "failures": len(failures),
        "failures_by_rule": dict(sorted(by_rule.items())),
        "failure_examples": {r: v for r, v in sorted(examples.items())},
        "failures_by_kind": dict(kinds.most_common()),
        "warnings_by_rule": dict(sorted(collections.Counter(f["rule"] for f in engine_out["findings"] if f["severity"] == "warning").items())),
    }


def kind(finding: dict) -> str:
    """A finding's message with its particulars (names, numbers) taken out: what kind of failure."""
    m = re.sub(r"`[^`]*`", "`…`", finding["message"])
    m = re.sub(r"\d+(\.\d+)?", "N", m)
    return f"{finding['rule']}: {m.split(':')[0][:110]}"


def visit(a, target: dict, commit: str, time_it: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="fidelity-") as tree:
        export(a.git_dir, commit, tree, target["export"])
        cfg = Path(tree, ".github", "ci-registrar.yml")
        own_config = cfg.exists()
        if target["config"] is not None:
            cfg.parent.mkdir(parents=True, exist_ok=True)
            cfg.write_text(target["config"])
        t_out, _ = run_collector(target, tree)
        e_out, _ = run_engine(a, tree)
        row = {
            "commit": commit,
            "date": git(a.git_dir, "log", "-1", "--format=%cs", commit).strip(),
            "subject": git(a.git_dir, "log", "-1", "--format=%s", commit).strip()[:80],
            "target_accepted": t_out.get("accepted"),
            "target_rejected_because": t_out.get("rejected_because"),
            "target_file_errors": t_out.get("errors", []),
            "target_files": t_out.get("files"),
            "stubbed_modules": t_out.get("stubbed_modules"),
            "collector_error": t_out.get("collector_error"),
            "engine_error": e_out.get("engine_error"),
            "tree_had_own_config": own_config,
            **compare(t_out, e_out),
        }
        row["false_failures_by_rule"] = row["failures_by_rule"] if row["target_accepted"] else {}
        if time_it:
            tc = min(run_collector(target, tree, timing_only=True)[1] for _ in range(a.repeat))
            te = min(run_engine(a, tree)[1] for _ in range(a.repeat))
            row["timing"] = {"collector_s": round(tc, 3), "engine_s": round(te, 3), "ratio_engine_over_collector": round(te / tc, 2) if tc else None}
        return row


def print_row(r: dict) -> None:
    ff = ", ".join(f"{k} {v}" for k, v in r["failures_by_rule"].items()) or "none"
    acc = "accepted" if r["target_accepted"] else "REJECTED"
    print(f"\n== {r['commit']} {r['date']} {r['subject']}")
    print(f"   target {acc}: {r['target']} registrations from {r['target_files']} files; engine {r['engine']}")
    print(f"   agreed {r['agreed']}  only-target {r['only_target']}  only-engine {r['only_engine']}  agreement {r['agreement_pct']}% (explicit only: {r['agreement_pct_explicit']}%)")
    for why, n in r["only_target_why"].items():
        print(f"     only-target: {n:4d}  {why}")
    label = "false failures" if r["target_accepted"] else "failures (target rejected too)"
    print(f"   {label}: {r['failures']} ({ff})")
    for k, n in r["failures_by_kind"].items():
        print(f"     {n:4d}  {k}")
    for rule, ex in r["failure_examples"].items():
        print(f"     {rule} e.g. {ex[0][:200]}")
    if r.get("collector_error"):
        print("   collector error:", r["collector_error"].strip().splitlines()[-1])
    if r.get("engine_error"):
        print("   engine error:", r["engine_error"].strip().splitlines()[-1])
    if "timing" in r:
        t = r["timing"]
        print(f"   timing (whole process, best of repeats): collector {t['collector_s']} s, engine {t['engine_s']} s, ratio {t['ratio_engine_over_collector']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=sorted(TARGETS), required=True, help="which collector adapter and engine configuration")
    ap.add_argument("--git-dir", required=True, help="a clone's .git or a bare repository of the target")
    ap.add_argument("--commits", nargs="+", help="commits to visit")
    ap.add_argument("--every", type=int, default=1, help="with --since/--until: every Nth first-parent commit")
    ap.add_argument("--since")
    ap.add_argument("--until")
    ap.add_argument("--branch", default="HEAD")
    ap.add_argument("--touching", nargs="*", help="only commits that touch these paths")
    ap.add_argument("--engine", help="the ci-registrar executable (default: on PATH, else .venv/bin)")
    ap.add_argument("--repeat", type=int, default=3, help="timing repeats on the newest commit")
    ap.add_argument("--details", help="write every row (with examples) to this JSON file")
    ap.add_argument("--list-commits", action="store_true", help="only print the commits that would be visited")
    a = ap.parse_args(argv)
    target = TARGETS[a.target]
    commits = pick_commits(a)
    if not commits:
        print("no commits selected", file=sys.stderr)
        return 2
    if a.list_commits:
        for c in commits:
            print(c, git(a.git_dir, "log", "-1", "--format=%cs %s", c).strip())
        return 0
    newest = max(commits, key=lambda c: int(git(a.git_dir, "log", "-1", "--format=%ct", c)))
    rows = []
    for c in commits:
        row = visit(a, target, c, time_it=(c == newest))
        print_row(row)
        rows.append(row)
    if a.details:
        Path(a.details).write_text(json.dumps(rows, indent=1))
    accepted = [r for r in rows if r["target_accepted"]]
    ff = collections.Counter()
    for r in accepted:
        ff.update(r["false_failures_by_rule"])
    summary = {
        "target": a.target,
        "commits": len(rows),
        "commits_target_accepted": len(accepted),
        "agreement_pct_mean": round(sum(r["agreement_pct"] for r in rows) / len(rows), 1),
        "agreement_pct_newest": next(r["agreement_pct"] for r in rows if r["commit"] == newest),
        "agreement_pct_explicit_mean": round(sum(r["agreement_pct_explicit"] for r in rows) / len(rows), 1),
        "agreed": sum(r["agreed"] for r in rows),
        "only_target": sum(r["only_target"] for r in rows),
        "only_engine": sum(r["only_engine"] for r in rows),
        "commits_with_false_failures": sum(1 for r in accepted if r["false_failures_by_rule"]),
        "false_failures_by_rule": dict(sorted(ff.items())),
        "per_commit": [{"commit": r["commit"], "agreement_pct": r["agreement_pct"], "explicit": r["agreement_pct_explicit"], "false_failures": r["false_failures_by_rule"]} for r in rows],
        "timing": next(r["timing"] for r in rows if r["commit"] == newest),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

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

`--warm` checks every commit a second time through the same scan cache (`--cache-dir`, what a
pre-commit hook's second run reads), `--index` once more through the App's registration index
(checks of a commit through bot.store.index.RegistrationIndex on a SQLite store kept for the
whole sweep, in the App's analysis child process, on a tree that gives blob SHAs as GitHub's
does); each report is diffed against the cold one, registration for registration and finding for
finding. Rows are grouped by era: the runner's discovery idiom and suite validation at that
commit, as the engine read them. Every failure left on a commit the target accepted is
classified: a REG010 whose suite no workflow of that commit names is a real defect (the test
never runs), anything else is listed as a tool error to look at, with the finding as evidence.

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
        "start_dir": "",  # `python tests/ci/run_suite.py` from the root
        "register_module": "tests/ci/ci_register.py=tests.ci.ci_register",
        "export": None,  # the whole tree
        "config": None,  # the engine's defaults are written for miles
    },
    "sglang": {
        "runner": "test/run_suite.py",
        "start_dir": "test",  # the workflows run `cd test && python3 run_suite.py`
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


def engine_cmd(a, cache_dir: str | None = None) -> list[str]:
    exe = a.engine or shutil.which("ci-registrar") or str(ROOT / ".venv" / "bin" / "ci-registrar")
    cache = ["--cache-dir", cache_dir] if cache_dir else ["--no-cache"]
    return [exe, "check", "--format", "json", *cache, "--repo"]


def run_collector(target: dict, tree: str, timing_only: bool = False) -> tuple[dict, float]:
    cmd = [sys.executable, str(COLLECTOR), "--runner", target["runner"], "--register-module", target["register_module"],
           "--start-dir", target.get("start_dir", "")]
    if timing_only:
        cmd.append("--timing-only")
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        return {"collector_error": p.stderr[-3000:], "registrations": [], "errors": [], "accepted": False}, dt
    return json.loads(p.stdout.strip().splitlines()[-1]), dt


def run_engine(a, tree: str, cache_dir: str | None = None) -> tuple[dict, float]:
    t0 = time.perf_counter()
    p = subprocess.run(engine_cmd(a, cache_dir) + [tree], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    try:
        return json.loads(p.stdout), dt
    except json.JSONDecodeError:
        return {"engine_error": (p.stderr or p.stdout)[-3000:], "registrations": [], "findings": []}, dt


def run_indexed(tree: str, store_url: str) -> dict:
    """The check of `tree` as the App runs it: bot.analysis.bounded.run_check_bounded with the
    registration index of `store_url` (a child process of its own, so the bench's imports stay out)."""
    p = subprocess.run([sys.executable, __file__, "_indexed", tree, store_url], capture_output=True, text=True, cwd=ROOT)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"engine_error": (p.stderr or p.stdout)[-3000:], "registrations": [], "findings": []}


def _indexed_child(tree: str, store_url: str) -> None:
    from bot.analysis.bounded import run_check_bounded
    from bot.store.db import upgrade
    from bot.store.index import RegistrationIndex
    from checks.reporting.render import to_json
    from checks.scanning.tree import DirectoryTree, git_blob_sha

    class ShaTree(DirectoryTree):  # GitHub's tree API gives every blob SHA without reading it
        def blob_sha(self, path):
            data = self.read(path)
            return git_blob_sha(data) if data is not None else None

    upgrade(store_url)
    index = RegistrationIndex(store_url, "fidelity/target")
    report = run_check_bounded(ShaTree(tree), scan_cache=index, timeout_s=600, memory_bytes=4 << 30)
    out = json.loads(to_json(report))
    out["index"] = {"hits": index.hits, "misses": index.misses}
    print(json.dumps(out))


def report_diff(cold: dict, other: dict) -> dict:
    """What `other` reports differently from `cold`: registrations and findings, as multisets of
    their whole JSON objects."""
    def bag(items):
        return collections.Counter(json.dumps(x, sort_keys=True) for x in items)

    out = {}
    for part in ("registrations", "findings"):
        a, b = bag(cold.get(part, [])), bag(other.get(part, []))
        out[part] = {"only_cold": sum((a - b).values()), "only_other": sum((b - a).values()),
                     "examples": [json.loads(x) for x in list((a - b) + (b - a))[:2]]}
    out["identical"] = all(v["only_cold"] == 0 and v["only_other"] == 0 for v in out.values() if isinstance(v, dict)) \
        and cold.get("summary") == other.get("summary") and bool(other.get("engine_error")) == bool(cold.get("engine_error"))
    return out


def era_of(tree: str, config_text: str | None) -> str:
    """The runner's discovery idiom and suite validation at this commit, as the engine reads them."""
    from checks.config.schema import load_config
    from checks.target.contract import read_contract
    from checks.scanning.tree import DirectoryTree

    t = DirectoryTree(tree)
    config, _ = load_config(config_text if config_text is not None else t.read(".github/ci-registrar.yml"))
    contract = read_contract(t, config)
    sources = contract.discovery
    if sources is None:
        idiom = "discovery from the configuration" if contract.facts.sources is not None or not contract.facts.discovery_where \
            else "discovery unreadable"
    elif any(s.sanity_check is not None for s in sources):
        idiom = "branches on --nightly"
    elif any(s.base for s in sources):
        idiom = f"globs relative to {sources[0].base}/"
    elif any(s.absolute for s in sources):
        idiom = "globs from __file__"
    else:
        idiom = "repo-relative globs"
    if contract.facts.validates_disabled is not None:
        validation = "validates suites"
    elif contract.unknown_suite_warns:
        validation = "warns on unknown suites"
    else:
        validation = "no suite validation"
    return f"{idiom}; {validation}"


def classify_failure(tree: str, finding: dict) -> tuple[str, str]:
    """(tool error | real defect, evidence) for a failure on a commit the target accepted."""
    if finding["rule"] == "REG010":
        m = re.search(r"suite `([^`]+)`", finding["message"])
        suite = m.group(1) if m else None
        b = re.search(r"is not an? (\w+) suite", finding["message"])
        backend = b.group(1) if b else None
        named, other_hw, no_hw = [], [], []  # lines that name the suite: with this --hw, another, none
        wf = Path(tree, ".github", "workflows")
        if suite and wf.is_dir():
            for path in sorted(wf.glob("*.y*ml")):
                for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                    if re.search(rf"(?<![\w-]){re.escape(suite)}(?![\w-])", line):
                        hw = re.search(r"--hw[ =]['\"]?(\w+)", line)
                        where = f"{path.name}:{i}"
                        (no_hw if not hw else named if hw.group(1) == backend else other_hw).append(where)
        runs_file = []
        if wf.is_dir():
            rel = finding["file"].split("/", 1)[1] if "/" in finding["file"] else finding["file"]
            for path in sorted(wf.glob("*.y*ml")):
                for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                    if re.search(rf"python3? +(?:{re.escape(finding['file'])}|{re.escape(rel)})\b", line):
                        runs_file.append(f"{path.name}:{i}")
        if runs_file:
            return "tool error", f"no job selects `{suite}`, but {', '.join(runs_file[:2])} runs the file itself (`python3 <file>`): the test runs, the engine does not read direct runs"
        if named:
            return "tool error", f"`{suite}` is run with `--hw {backend}` at {', '.join(named[:3])}"
        if other_hw:
            return "real defect", (f"`{suite}` is run only with another `--hw` ({', '.join(other_hw[:2])}); no {backend} job selects "
                                   f"this registration, the test never runs")
        if no_hw:
            return "real defect", (f"`{suite}` is named only where no `--hw {backend}` runs it ({', '.join(no_hw[:2])}: a job name, "
                                   f"an input or another backend's caller); the engine found no {backend} job for it")
        return "real defect", f"no workflow names `{suite}`: the runner collects the registration, no job selects it, the test never runs"
    return "tool error", f"{finding['file']}:{finding['line']}: {finding['message'][:200]}"


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
        cache_dir = tempfile.mkdtemp(prefix="fidelity-cache-")
        try:
            e_out, _ = run_engine(a, tree, cache_dir)  # cold: an empty cache
            warm = run_engine(a, tree, cache_dir)[0] if a.warm else None
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
        indexed = run_indexed(tree, a.store_url) if a.index else None
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
        row["era"] = era_of(tree, target["config"])
        if warm is not None:
            row["warm"] = {**compare(t_out, warm), "diff": report_diff(e_out, warm)}
        if indexed is not None:
            row["indexed"] = {**compare(t_out, indexed), "diff": report_diff(e_out, indexed), "index": indexed.get("index")}
        row["classified"] = [
            {"rule": f["rule"], "file": f["file"], "line": f["line"], "class": c, "evidence": ev}
            for f in e_out["findings"] if f["severity"] == "failure" and row["target_accepted"]
            for c, ev in [classify_failure(tree, f)]
        ]
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
    for mode in ("warm", "indexed"):
        if mode in r:
            m = r[mode]
            same = "identical to cold" if m["diff"]["identical"] else f"DIFFERS from cold: {m['diff']}"
            extra = f", index hits {m['index']['hits']} misses {m['index']['misses']}" if m.get("index") else ""
            print(f"   {mode}: agreement {m['agreement_pct']}%, {same}{extra}")
    for c in r.get("classified", [])[:6]:
        print(f"     {c['class']}: {c['rule']} {c['file']}:{c['line']}: {c['evidence'][:160]}")
    if "timing" in r:
        t = r["timing"]
        print(f"   timing (whole process, best of repeats): collector {t['collector_s']} s, engine {t['engine_s']} s, ratio {t['ratio_engine_over_collector']}")


def eras(rows: list[dict]) -> dict:
    out: dict[str, dict] = {}
    for r in rows:
        if "not a target repository" in (r.get("engine_error") or ""):
            r["era"] = "not a target yet (no register module)"  # miles before its tests/ci existed
        e = out.setdefault(r["era"], {"commits": 0, "first": r["date"], "last": r["date"], "accepted": 0,
                                      "agreement_min": {"cold": 100.0, "warm": None, "indexed": None},
                                      "not_identical": {"warm": 0, "indexed": 0},
                                      "failures_on_accepted": 0, "tool_errors": 0, "real_defects": 0, "examples": []})
        e["commits"] += 1
        e["first"], e["last"] = min(e["first"], r["date"]), max(e["last"], r["date"])
        e["accepted"] += bool(r["target_accepted"])
        e["agreement_min"]["cold"] = min(e["agreement_min"]["cold"], r["agreement_pct"])
        for mode in ("warm", "indexed"):
            if mode in r:
                prev = e["agreement_min"][mode]
                e["agreement_min"][mode] = r[mode]["agreement_pct"] if prev is None else min(prev, r[mode]["agreement_pct"])
                e["not_identical"][mode] += not r[mode]["diff"]["identical"]
        for c in r.get("classified", []):
            e["failures_on_accepted"] += 1
            e["tool_errors" if c["class"] == "tool error" else "real_defects"] += 1
            if len(e["examples"]) < 3:
                e["examples"].append(f"{r['commit']} {c['class']}: {c['rule']} {c['file']}:{c['line']} ({c['evidence'][:140]})")
    return out


def print_eras(table: dict) -> None:
    print("\n| era | commits | dates | accepted | agreement min cold / warm / indexed | warm, indexed not identical | failures on accepted | tool errors | real defects |")
    print("| --- | ---: | --- | ---: | --- | --- | ---: | ---: | ---: |")
    for name, e in table.items():
        m = e["agreement_min"]
        fmt = lambda v: "-" if v is None else f"{v}%"  # noqa: E731
        print(f"| {name} | {e['commits']} | {e['first']} .. {e['last']} | {e['accepted']} | {fmt(m['cold'])} / {fmt(m['warm'])} / {fmt(m['indexed'])} "
              f"| {e['not_identical']['warm']}, {e['not_identical']['indexed']} | {e['failures_on_accepted']} | {e['tool_errors']} | {e['real_defects']} |")
        for ex in e["examples"]:
            print(f"|   e.g. {ex} |")


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
    ap.add_argument("--warm", action="store_true", help="check every commit a second time through the scan cache; diff against cold")
    ap.add_argument("--index", action="store_true", help="check every commit through the App's registration index; diff against cold")
    ap.add_argument("--store-url", help="the index's store (default: a SQLite file for the sweep)")
    ap.add_argument("--no-timing", action="store_true", help="skip the timing of the newest commit")
    a = ap.parse_args(argv)
    if a.index and not a.store_url:
        a.store_url = f"sqlite:///{tempfile.mkdtemp(prefix='fidelity-index-')}/store.db"
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
        row = visit(a, target, c, time_it=(c == newest and not a.no_timing))
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
        "timing": next((r["timing"] for r in rows if r["commit"] == newest and "timing" in r), None),
        "eras": eras(rows),
    }
    print_eras(summary["eras"])
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "_indexed":
        _indexed_child(sys.argv[2], sys.argv[3])
        sys.exit(0)
    sys.exit(main())

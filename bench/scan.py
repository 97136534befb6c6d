"""Benchmark: the whole-tree check against what the target's own runner pays (ast.parse of every file).

Builds (or takes with --repo) a tree of 400 test files shaped like radixark/miles (about 7 KB each,
a third with registrations), then prints, best of --repeat runs each:
  - in-process: check_tree over the tree vs reading + ast.parse of every discovered file;
  - whole process: `ci-registrar check` vs a `python -c` that parses every discovered file with ast,
    as JSON (no fix rendered) and as text with the tree's --fixes misspelt suites' fixes shown;
    each with the scan cache cold (a new empty --cache-dir every run) and warm (the cache of the
    run before), and with --no-cache;
  - diff mode: re-checking one changed file (`check --base HEAD~1 --head HEAD`).
Ends with one JSON line of the figures. Not a timed test: CI does not gate on it.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.miles import miles_tree  # noqa: E402

BODY_UNIT = '''

class TestCase{n}:
    """Exercise the training loop with configuration {n}."""

    def setup_method(self):
        self.args = dict(model="Qwen3-4B", tp={tp}, pp=1, micro_batch_size={mb}, rollout_batch_size=32)
        self.extra = ["--use-dynamic-batch-size", "--max-tokens-per-gpu", "{tok}"]

    def test_step_{n}(self, tmp_path):
        result = run_training(self.args, extra=self.extra, output_dir=tmp_path / "run-{n}")
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.metrics["loss"] < {loss}
        for key, value in sorted(result.metrics.items()):
            if key.startswith("grad_norm"):
                assert value == value, f"{{key}} is NaN"
'''

HEADER = '''"""End-to-end test {i}: trains a small model for a few steps and checks the metrics."""

import os
import subprocess

import pytest

from tests.e2e.utils import run_training
'''

SUITES = {
    "cuda": ["stage-c-8-gpu-h200", "stage-c-4-gpu-h200", "stage-c-2-gpu-h200", "stage-b-2-gpu-h200"],
    "rocm": ["stage-c-4-gpu-mi350", "nightly-stage-c-8-gpu-mi350", "nightly-stage-c-4-gpu-mi350", "nightly-stage-c-2-gpu-mi350"],
}


def make_test_file(i: int, registered: bool, rng: random.Random, misspelt: bool = False) -> str:
    parts = [HEADER.format(i=i)]
    if registered:
        parts.append("from tests.ci.ci_register import register_cuda_ci, register_rocm_ci\n\n")
        parts.append(f'register_cuda_ci(est_time={rng.randint(1, 60) * 10}, suite="{rng.choice(SUITES["cuda"])}", labels=["megatron"])\n')
        if misspelt:  # a suite one keystroke off: a REG010 with a fix the text output renders (libcst)
            parts.append(f'register_rocm_ci(est_time={rng.randint(1, 60) * 10}, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])\n')
        elif rng.random() < 0.6:
            parts.append(f'register_rocm_ci(est_time={rng.randint(1, 60) * 10}, suite="{rng.choice(SUITES["rocm"])}", labels=["long"])\n')
    n = 0
    while sum(len(p) for p in parts) < 7000:
        parts.append(BODY_UNIT.format(n=n, tp=rng.choice([1, 2, 4]), mb=rng.choice([1, 2]), tok=rng.randint(1000, 9000), loss=rng.random() * 5))
        n += 1
    return "".join(parts)


def build_tree(target: Path, files: int = 400, seed: int = 7, fixes: int = 5) -> None:
    rng = random.Random(seed)
    tree = miles_tree()
    for i in range(files):
        registered = i % 3 == 0
        # unregistered files live in the implicit-CPU root, as tests/fast files do
        folder = "tests/e2e/megatron" if registered else "tests/fast/unit"
        tree[f"{folder}/test_case_{i:03d}.py"] = make_test_file(i, registered, rng, misspelt=registered and i // 3 < fixes)
    for path, text in tree.items():
        p = target / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def discovered_files(repo: Path) -> list[Path]:
    from checks.config.schema import load_config
    from checks.engine import discover
    from checks.scanning.tree import DirectoryTree

    config, _ = load_config((repo / ".github/ci-registrar.yml").read_bytes() if (repo / ".github/ci-registrar.yml").exists() else None)
    return [repo / p for p in discover(DirectoryTree(repo).paths(), config)]


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@x"}
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, help="an existing checkout to measure instead of the generated tree")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from checks.engine import check_tree
    from checks.scanning.tree import DirectoryTree, GitRevisionTree, changed_paths

    tmp = None
    repo = args.repo
    if repo is None:
        tmp = tempfile.TemporaryDirectory()
        repo = Path(tmp.name)
        build_tree(repo)
    files = discovered_files(repo)

    def ast_all():
        for f in files:
            ast.parse(f.read_bytes())

    from checks.scanning.scan_cache import DiskScanCache

    cache_root = Path(tempfile.mkdtemp(prefix="scan-cache-"))
    warm_cache = DiskScanCache(cache_root / "warm-in-process")

    def check_all():
        check_tree(DirectoryTree(repo))

    def check_all_warm():
        check_tree(DirectoryTree(repo), scan_cache=warm_cache)

    ast_all(), check_all(), check_all_warm()  # warm the page cache (and the scan cache) for both
    t_ast = best(ast_all, args.repeat)
    t_check = best(check_all, args.repeat)
    t_check_warm = best(check_all_warm, args.repeat)

    exe = str(Path(sys.executable).with_name("ci-registrar"))
    listing = Path(tempfile.mkstemp(suffix=".txt")[1])
    listing.write_text("\n".join(str(f) for f in files))
    ast_cmd = [sys.executable, "-c", f"import ast\nfor p in open({str(listing)!r}).read().split(chr(10)):\n    ast.parse(open(p,'rb').read())"]
    cold_dirs = iter(range(10**6))
    warm_dir = str(cache_root / "warm")

    def cached(cmd, warm: bool):
        return [*cmd, "--cache-dir", warm_dir if warm else str(cache_root / f"cold-{next(cold_dirs)}")]

    check_cmd = [exe, "check", "--repo", str(repo), "--format", "json"]
    text_cmd = [exe, "check", "--repo", str(repo)]
    run = lambda cmd: subprocess.run(cmd, capture_output=True, check=False)  # noqa: E731
    t_ast_proc = best(lambda: run(ast_cmd), args.repeat)
    t_check_nocache_proc = best(lambda: run([*check_cmd, "--no-cache"]), args.repeat)
    t_check_cold_proc = best(lambda: run(cached(check_cmd, False)), args.repeat)
    run(cached(check_cmd, True))
    t_check_proc = best(lambda: run(cached(check_cmd, True)), args.repeat)
    # The text output shows each fix, formatted by a libcst codemod: the whole cost of fixes present.
    fixes_shown = run(cached(text_cmd, True)).stdout.decode().count("fix:")
    t_check_fix_proc = best(lambda: run(cached(text_cmd, True)), args.repeat)
    t_check_fix_cold_proc = best(lambda: run(cached(text_cmd, False)), args.repeat)

    # diff mode: one changed file (an est_time edit) on top of a commit of the whole tree
    t_diff = t_diff_proc = None
    if args.repo is None:
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "base")
        target = next(f for f in files if "register_cuda_ci(" in f.read_text())
        text = target.read_text()
        target.write_text(text.replace("register_cuda_ci(est_time=", "register_cuda_ci(est_time=1", 1))
        git(repo, "commit", "-qam", "one est_time")

        def diff_check():
            head, base = GitRevisionTree(repo, "HEAD"), GitRevisionTree(repo, "HEAD~1")
            check_tree(head, base=base, changed=changed_paths(repo, base.commit, head.commit))

        t_diff = best(diff_check, args.repeat)
        t_diff_proc = best(lambda: run(cached([exe, "check", "--repo", str(repo), "--base", "HEAD~1", "--head", "HEAD", "--format", "json"], True)), args.repeat)

    figures = {
        "files": len(files),
        "ast_parse_s": round(t_ast, 4),
        "check_s": round(t_check, 4),
        "ratio": round(t_check / t_ast, 3),
        "check_warm_s": round(t_check_warm, 4),
        "ratio_warm": round(t_check_warm / t_ast, 3),
        "ast_process_s": round(t_ast_proc, 4),
        "check_process_s": round(t_check_proc, 4),
        "process_ratio": round(t_check_proc / t_ast_proc, 3),
        "check_cold_process_s": round(t_check_cold_proc, 4),
        "process_ratio_cold": round(t_check_cold_proc / t_ast_proc, 3),
        "check_nocache_process_s": round(t_check_nocache_proc, 4),
        "process_ratio_nocache": round(t_check_nocache_proc / t_ast_proc, 3),
        "fixes_shown": fixes_shown,
        "check_with_fixes_process_s": round(t_check_fix_proc, 4),
        "process_ratio_with_fixes": round(t_check_fix_proc / t_ast_proc, 3),
        "process_ratio_with_fixes_cold": round(t_check_fix_cold_proc / t_ast_proc, 3),
        "diff_one_file_s": round(t_diff, 4) if t_diff is not None else None,
        "diff_one_file_process_s": round(t_diff_proc, 4) if t_diff_proc is not None else None,
    }
    print(f"discovered test files: {figures['files']}")
    print(f"in-process:   check {t_check:.3f} s (no cache), {t_check_warm:.3f} s (warm cache) vs ast.parse of every file "
          f"{t_ast:.3f} s -> ratio {figures['ratio']} / {figures['ratio_warm']}")
    print(f"whole process: ci-registrar check, warm cache {t_check_proc:.3f} s vs python+ast {t_ast_proc:.3f} s -> ratio "
          f"{figures['process_ratio']} (target <= 0.5); cold cache {t_check_cold_proc:.3f} s -> {figures['process_ratio_cold']}; "
          f"--no-cache {t_check_nocache_proc:.3f} s -> {figures['process_ratio_nocache']}")
    print(f"whole process, {fixes_shown} fixes shown (text output): warm {t_check_fix_proc:.3f} s -> ratio "
          f"{figures['process_ratio_with_fixes']} (target <= 0.5); cold -> {figures['process_ratio_with_fixes_cold']}")
    if t_diff is not None:
        print(f"diff mode, one changed file: {t_diff:.3f} s in-process, {t_diff_proc:.3f} s as a process")
    print(json.dumps(figures))
    listing.unlink()
    import shutil

    shutil.rmtree(cache_root, ignore_errors=True)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()

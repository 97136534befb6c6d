"""Scan facts (checks/scanning/scan_facts.py) and the command line's disk cache (checks/scanning/scan_cache.py).

A check through a cache reports exactly what a check without one reports, cold or warm; a corrupt
entry is a miss; keys change with the content, the contract, the implicit-CPU root and `exact`.
"""

from __future__ import annotations

import json
import os

from checks.target.contract import read_contract
from checks.config.schema import Config
from checks.engine import check_tree
from checks.scanning.registrations import scan_file
from checks.scanning.scan_cache import DiskScanCache
from checks.scanning.scan_facts import (
    ENGINE_FACTS_VERSION,
    contract_fingerprint,
    decode,
    dumps,
    from_facts,
    git_blob_sha,
    scan_key,
    to_facts,
)
from checks.scanning.tree import MemoryTree
from tests import REPO
from tests.fixtures.miles import miles_tree, test_file

test_file.__test__ = False

P = "tests/e2e/test_x.py"


def _report_key(report):
    regs = [(r.file, r.function, r.backend.value, r.span, tuple(sorted((k, repr(a.value), a.span, a.source) for k, a in r.arguments.items())))
            for r in report.registrations]
    finds = [(f.rule, f.severity.value, f.file, f.span, f.message, f.suggestion, f.fix) for f in report.findings]
    return regs, finds, report.files_checked


SOURCES = {
    "tests/e2e/test_tuple.py": test_file('register_rocm_ci(est_time=float("inf"), suite=("a",), labels=("long",))'),
    "tests/e2e/test_odd.py": test_file('register_rocm_ci(est_time=1e999, suite=b"x", labels=[...], nightly=1j)'),
    "tests/e2e/test_typo.py": test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi35", labels=["long"])'),
    "tests/e2e/test_broken.py": test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])') + "def broken(:\n",
    "tests/e2e/test_alias.py": "from tests.ci.ci_register import register_rocm_ci as r\n\nr(est_time=1)\n",
    "tests/e2e/test_none.py": "x = 1\n",
    "tests/e2e/test_none_broken.py": "x = (\n",
    "tests/fast/test_fast.py": "x = 1\n",
    "tests/e2e/2xgpu_test_gpus.py": "NUM_GPUS = 2\n" + test_file('register_cuda_ci(est_time=10, suite="stage-c-4-gpu-h200", labels=["long"])'),
}


def test_facts_round_trip_every_kind_of_literal():
    contract = read_contract(MemoryTree(miles_tree()), Config())
    for path, text in SOURCES.items():
        scan = scan_file(path, text.encode(), contract, exact=True)
        facts = decode(dumps(to_facts(scan)))
        again = from_facts(facts, path)
        assert again.registrations == scan.registrations, path
        assert again.findings == scan.findings, path
        assert (again.parsed, again.unreadable, again.invisible, again.num_gpus_constant) == (scan.parsed, scan.unreadable, scan.invisible, scan.num_gpus_constant)
        assert again.lines == []  # not facts: fixes re-read the file
        assert facts["v"] == ENGINE_FACTS_VERSION
        json.loads(dumps(facts))  # strict JSON: no bare NaN/Infinity


def test_facts_are_path_free():
    contract = read_contract(MemoryTree(miles_tree()), Config())
    text = (SOURCES["tests/e2e/test_alias.py"] + test_file('register_rocm_ci(est_time=-1, suite="s", labels=["long"])')).encode()
    facts = to_facts(scan_file("tests/e2e/a.py", text, contract))
    assert "tests/e2e/a.py" not in dumps(facts)
    moved = from_facts(facts, "tests/e2e/b.py")
    assert {r.file for r in moved.registrations} == {f.file for f in moved.findings} == {"tests/e2e/b.py"}


def test_git_blob_sha_is_gits():
    assert git_blob_sha(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert git_blob_sha(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_keys_depend_on_every_input():
    contract = read_contract(MemoryTree(miles_tree()), Config())
    fp = contract_fingerprint(contract)
    assert fp == contract_fingerprint(read_contract(MemoryTree(miles_tree()), Config()))
    other = read_contract(MemoryTree(miles_tree()), Config())
    other.labels = frozenset({"only-this"})
    assert contract_fingerprint(other) != fp
    keys = {scan_key(s, f, i, e) for s in ("a" * 40, "b" * 40) for f in (fp, "0" * 64) for i in (False, True) for e in (False, True)}
    assert len(keys) == 16


def test_cached_check_equals_uncached_cold_and_warm(tmp_path):
    files = miles_tree(**SOURCES)
    plain = check_tree(MemoryTree(files))
    cache = DiskScanCache(tmp_path)
    cold = check_tree(MemoryTree(files), scan_cache=cache)
    assert cache.writes > 0 and cache.hits == 0
    warm = check_tree(MemoryTree(files), scan_cache=cache)
    assert cache.hits >= cache.writes
    assert _report_key(plain) == _report_key(cold) == _report_key(warm)
    assert any(f.fix is not None for f in warm.findings)  # the fix re-read the file's lines
    assert any(f.rule == "REG001" and f.file == "tests/e2e/test_broken.py" for f in warm.findings)


def test_corrupt_packs_and_entries_are_misses(tmp_path):
    files = miles_tree(**SOURCES)
    cache = DiskScanCache(tmp_path)
    expected = _report_key(check_tree(MemoryTree(files), scan_cache=cache))
    (pack,) = (tmp_path / f"scans-v{ENGINE_FACTS_VERSION}").glob("pack-*.json")
    entries = json.loads(pack.read_text())["entries"]
    garbage = [[1, 2], {"v": ENGINE_FACTS_VERSION, "parsed": True}, {"v": ENGINE_FACTS_VERSION + 1},
               {**next(iter(entries.values())), "registrations": {"x": 1}}, {"$tuple": 5}, "text"]
    for i, key in enumerate(sorted(entries)):
        entries[key] = garbage[i % len(garbage)]
    pack.write_text(json.dumps({"entries": entries}))
    assert _report_key(check_tree(MemoryTree(files), scan_cache=DiskScanCache(tmp_path))) == expected
    for bad in (b"", b"{not json", b"[1,2]", b'{"entries": []}', b"\xff\xfe"):
        for p in (tmp_path / f"scans-v{ENGINE_FACTS_VERSION}").glob("pack-*.json"):
            p.write_bytes(bad)
        assert _report_key(check_tree(MemoryTree(files), scan_cache=DiskScanCache(tmp_path))) == expected


def test_cache_is_bounded(tmp_path):
    cache = DiskScanCache(tmp_path, max_entries=10, max_packs=3)
    for round_ in range(6):
        cache.put_many({f"{round_:02x}{i:062x}": {"v": ENGINE_FACTS_VERSION, "n": i} for i in range(7)})
    again = DiskScanCache(tmp_path)
    assert len(again._load()) <= 10
    assert len(list((tmp_path / f"scans-v{ENGINE_FACTS_VERSION}").glob("pack-*.json"))) <= 3
    assert f"{5:02x}{6:062x}" in again._load()  # the newest entries are the ones kept


def test_keys_are_data_never_paths(tmp_path):
    cache = DiskScanCache(tmp_path / "c")
    cache.put_many({"../../escape": {"v": 1}})
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file())[0].startswith("pack-")
    assert not list(tmp_path.glob("escape*"))


def test_one_pack_per_check(tmp_path):
    cache = DiskScanCache(tmp_path)
    check_tree(MemoryTree(miles_tree(**SOURCES)), scan_cache=cache)
    check_tree(MemoryTree(miles_tree(**SOURCES)), scan_cache=DiskScanCache(tmp_path))  # warm: writes nothing
    assert len(list(tmp_path.rglob("pack-*.json"))) == 1


def test_unwritable_directory_disables_the_cache(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cache = DiskScanCache(blocker)  # a file where the directory should be
    report = check_tree(MemoryTree(miles_tree(**SOURCES)), scan_cache=cache)
    assert not cache.enabled and report.files_checked


def test_a_scan_cut_short_by_a_limit_is_not_kept(tmp_path):
    from checks.limits import Limits

    cache = DiskScanCache(tmp_path)
    big = test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])') + "x = 1\n" * 200
    files = miles_tree(**{P: big})
    first = check_tree(MemoryTree(files), scan_cache=cache, limits=Limits(ast_nodes=100))
    second = check_tree(MemoryTree(files), scan_cache=cache, limits=Limits(ast_nodes=100))
    assert [f.rule for f in first.findings if f.file == P] == [f.rule for f in second.findings if f.file == P] == ["REG902"]


def test_blob_sha_tree_answers_hits_without_reading(tmp_path):
    files = miles_tree(**SOURCES)
    cache = DiskScanCache(tmp_path)
    expected = _report_key(check_tree(MemoryTree(files), scan_cache=cache, fixes=False))

    class ShaTree(MemoryTree):
        reads: list[str] = []

        def blob_sha(self, path):
            data = self._files.get(path)
            return git_blob_sha(data) if data is not None else None

        def read(self, path):
            self.reads.append(path)
            return super().read(path)

    tree = ShaTree(files)
    assert _report_key(check_tree(tree, scan_cache=cache, fixes=False)) == expected
    assert not [p for p in tree.reads if p in SOURCES]


def test_cli_cache_dir_cold_and_warm_agree(tmp_path):
    import subprocess

    from tests.conftest import CLI

    repo = tmp_path / "repo"
    for path, text in miles_tree(**SOURCES).items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    cache_dir = tmp_path / "cache"
    runs = [subprocess.run([CLI, "check", "--repo", str(repo), "--format", "json", "--cache-dir", str(cache_dir)], capture_output=True, text=True) for _ in range(2)]
    plain = subprocess.run([CLI, "check", "--repo", str(repo), "--format", "json", "--no-cache"], capture_output=True, text=True)
    assert runs[0].stdout == runs[1].stdout == plain.stdout
    assert runs[0].returncode == plain.returncode == 1
    assert list(cache_dir.rglob("*.json"))
    assert os.path.isdir(cache_dir / f"scans-v{ENGINE_FACTS_VERSION}")


def test_refused_hints_are_counted_so_their_scans_are_not_kept():
    from checks.target.suites import NearNames

    near = NearNames(budget=1)
    assert near.lookup("label", "x", {"a", "b"}, "labels", lambda n, c: "hint") == []
    assert near.lookup("label", "x", {"a", "b"}, "labels", lambda n, c: "hint") == []  # memo hit of a refused answer
    assert near.refused == 2


def test_the_contract_fingerprint_is_the_same_in_every_process():
    """A key that changed with each process (a predicate's repr holds its address) would make every
    cache and index lookup a miss: sglang's discovery holds such predicates."""
    import subprocess
    import sys
    from pathlib import Path

    root = REPO
    script = (
        "from pathlib import Path\n"
        "from checks.config.schema import load_config\n"
        "from checks.target.contract import read_contract\n"
        "from checks.scanning.scan_facts import contract_fingerprint\n"
        "from checks.scanning.tree import DirectoryTree\n"
        "from tests.fixtures.sglang import SGLANG_CONFIG\n"
        "tree = DirectoryTree(Path('tests/fixtures/targets/sglang/r2026-08-22-382343f'))\n"
        "config, problems = load_config(SGLANG_CONFIG)\n"
        "assert not problems, problems\n"
        "contract = read_contract(tree, config)\n"
        "assert contract.discovery, 'the runner discovery was read'\n"
        "print(contract_fingerprint(contract))\n"
    )
    prints = {subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True).stdout
              for _ in range(2)}
    assert len(prints) == 1, prints

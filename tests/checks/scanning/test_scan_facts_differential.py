"""A cached or indexed fact is the fact.

1. Every field of the scan's model (FileScan, Registration, Argument, Finding) is written to the
   facts or excluded with a reason (checks/scan_facts.NOT_FACTS); a fully populated instance, each
   field away from its default, comes back equal. A field added to the model without a codec
   fails here, and until it has one no scan is cached at all.
2. Differential: on the vendored miles and sglang trees, a check without a cache (cold), the
   second check through the command line's disk cache (warm) and checks through the App's
   registration index (the store, by git blob SHA, in the analysis child process as the App runs
   it) give the same report, finding for finding and field for field.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from checks.scanning import scan_facts
from checks.engine import check_tree
from checks.model import Argument, Backend, Change, Finding, Fix, Registration, Severity, Span
from checks.scanning.registrations import FileScan
from checks.reporting.render import to_json
from checks.scanning.scan_cache import DiskScanCache
from checks.scanning.tree import DirectoryTree, git_blob_sha
from tests import FIXTURES
from tests.conftest import CLI
from tests.fixtures.sglang import SGLANG_CONFIG

TARGETS = FIXTURES / "targets"
TREES = sorted(p for p in (TARGETS / "miles").glob("r*") if p.is_dir()) + \
    sorted(p for p in (TARGETS / "sglang").glob("r*") if p.is_dir())


def _config(root: Path) -> str | None:
    return SGLANG_CONFIG if root.parent.name == "sglang" else None


# -- 1. every field is a fact ---------------------------------------------------------------------

# A value away from the default for each annotation the model uses. An annotation not listed here
# fails the test: whoever adds a field adds its sample, and the round trip below then checks it.
_SPAN = Span(3, 5, 4, 9)
_ARG = Argument("suite", ("a", 1.5, None), True, Span(2, 3, 2, 9), '("a", 1.5, None)')
_SAMPLES = {
    "str": "sample",
    "int": 7,
    "bool": True,
    "Span": _SPAN,
    "Backend": Backend("tpu"),
    "tuple[int, int]": (4, 6),
    "dict[str, Argument]": {"suite": _ARG, "est_time": Argument("est_time", 30, True, Span(1, 1, 1, 3), "30")},
    "str | None": "set",
    "Change | None": Change.ADDED,
    "'Registration | None'": "skip",  # the diff's, never a scan's (NOT_FACTS)
    "Severity": Severity.WARNING,
    "Fix | None": Fix("f.py", 1, 1, "x"),
    "tuple[int, Span] | None": (2, _SPAN),
    "list[str]": ["a", "b"],
    "list": [[3, 1, "REG010", "a reason"]],  # FileScan.suppressions: [line, column, codes, reason]
}


def _sample(cls, f: dataclasses.Field):
    annotation = f.type if isinstance(f.type, str) else repr(f.type)
    assert annotation in _SAMPLES or f.name in ("registrations", "findings"), \
        f"{cls.__name__}.{f.name}: {annotation} has no sample in this test; add one"
    return _SAMPLES.get(annotation)


def _populated(cls, **given):
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in given:
            values[f.name] = given[f.name]
            continue
        value = _sample(cls, f)
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else object())
        if isinstance(default, bool) and value is True and default is True:
            value = False  # away from the default, whichever it is
        assert value != default, f"{cls.__name__}.{f.name}: the sample equals the default"
        values[f.name] = value
    return cls(**values)


def test_every_field_of_the_scan_model_is_written_or_excluded_with_a_reason():
    assert scan_facts.unpersisted_fields() == []
    for cls, reasons in scan_facts.NOT_FACTS.items():
        names = {f.name for f in dataclasses.fields(cls)}
        assert set(reasons) <= names, f"{cls.__name__}: NOT_FACTS names fields it does not have"
        assert all(reasons.values())


def test_a_field_added_to_the_model_without_a_codec_is_caught():
    Wider = dataclasses.make_dataclass("Registration", [("priority", int, dataclasses.field(default=0))], bases=(Registration,))
    codecs = {**scan_facts.CODECS}
    codecs[Wider] = codecs.pop(Registration)
    not_facts = {**scan_facts.NOT_FACTS, Wider: scan_facts.NOT_FACTS[Registration]}
    assert scan_facts.unpersisted_fields(codecs, not_facts) == ["Registration.priority"]


def test_a_fully_populated_scan_round_trips_field_for_field():
    path = "test/registered/x/test_all.py"
    reg = _populated(Registration, file=path, change=None, base=None, backend=Backend("tpu"))
    finding = _populated(Finding, file=path, fix=None, severity=Severity.NOTICE)
    scan = _populated(FileScan, path=path, registrations=[reg], findings=[finding], lines=[])
    again = scan_facts.from_facts(scan_facts.decode(scan_facts.dumps(scan_facts.to_facts(scan))), path)
    for f in dataclasses.fields(FileScan):
        assert getattr(again, f.name) == getattr(scan, f.name), f"FileScan.{f.name} did not survive the facts"
    for cls, a, b in ((Registration, again.registrations[0], reg), (Finding, again.findings[0], finding)):
        for f in dataclasses.fields(cls):
            assert getattr(a, f.name) == getattr(b, f.name), f"{cls.__name__}.{f.name} did not survive the facts"
    assert again.registrations[0].suite == reg.composed_suite  # the composed suite is what the rules read


def test_scans_that_the_facts_cannot_hold_are_refused_not_cut():
    path = "t.py"
    reg = _populated(Registration, file=path, change=None, base=None)
    classified = dataclasses.replace(reg, change=Change.REMOVED)
    with pytest.raises(scan_facts.UnfitForFacts):
        scan_facts.to_facts(FileScan(path, registrations=[classified]))
    fixed = _populated(Finding, file=path)
    with pytest.raises(scan_facts.UnfitForFacts):
        scan_facts.to_facts(FileScan(path, findings=[fixed]))


# -- 2. cold, warm and indexed reports are identical ----------------------------------------------


class ShaTree(DirectoryTree):
    """A checkout whose blob SHAs are known without reading, as the App's GitHub tree is."""

    def blob_sha(self, path: str) -> str | None:
        data = self.read(path)
        return git_blob_sha(data) if data is not None else None


def _same(a, b, what: str) -> None:
    assert to_json(a) == to_json(b), what
    assert a == b, what  # every field of every registration and finding, not only what JSON shows


@pytest.mark.parametrize("root", TREES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_cold_warm_and_indexed_reports_are_identical(root, tmp_path):
    from bot.analysis.bounded import run_check_bounded
    from bot.store.db import upgrade
    from bot.store.index import RegistrationIndex

    config = _config(root)
    kw = {"config_text": config} if config else {}
    cold = check_tree(DirectoryTree(root), **kw)
    assert cold.registrations, "a fixture tree with registrations"
    cache = DiskScanCache(tmp_path / "cache")
    first = check_tree(DirectoryTree(root), scan_cache=cache, **kw)
    warm = check_tree(DirectoryTree(root), scan_cache=DiskScanCache(tmp_path / "cache"), **kw)
    assert cache.writes > 0
    _same(cold, first, "first cached run")
    _same(cold, warm, "warm run (CLI cache)")

    url = f"sqlite:///{tmp_path / 'store.db'}"
    upgrade(url)
    reports = []
    for _ in range(2):  # the first fills the index, the second answers from it without reading
        index = RegistrationIndex(url, "o/r")
        reports.append(run_check_bounded(ShaTree(root), scan_cache=index, timeout_s=60, **kw))
    assert index.hits > 0 and index.misses == 0
    _same(cold, reports[0], "first indexed run")
    _same(cold, reports[1], "indexed run (App index)")
    # rows the child cannot decode (it gets their JSON text: bot.store.index.get_texts) are misses,
    # scanned again: the same report
    import sqlalchemy as sa

    from bot.store.db import session_scope
    from bot.store.index import IndexRow

    with session_scope(url) as session:
        keys = [k for (k,) in session.execute(sa.select(IndexRow.key)).all()]
        for key, bad in zip(keys, ["{not json", "[1, 2]", "null"]):
            session.execute(sa.update(IndexRow).where(IndexRow.key == key).values(facts=bad))
    _same(cold, run_check_bounded(ShaTree(root), scan_cache=RegistrationIndex(url, "o/r"), timeout_s=60, **kw),
          "indexed run over undecodable rows")


def test_composed_suites_survive_the_second_cli_run(tmp_path):
    """The bug as a user met it: `check --format json` twice on an sglang tree with its
    configuration; the second run gave `suite: null` for every composed registration."""
    import shutil

    repo = tmp_path / "sglang"
    shutil.copytree(TARGETS / "sglang" / "r2026-08-22-382343f", repo)
    (repo / ".github").mkdir(exist_ok=True)
    (repo / ".github" / "ci-registrar.yml").write_text(SGLANG_CONFIG)
    cmd = [CLI, "check", "--repo", str(repo), "--format", "json", "--cache-dir", str(tmp_path / "cache")]
    runs = [subprocess.run(cmd, capture_output=True, text=True) for _ in range(2)]
    assert runs[0].returncode == runs[1].returncode
    assert '"suite": "base-c-test-4-gpu-gb300"' in runs[0].stdout
    assert runs[0].stdout == runs[1].stdout


def test_the_main_block_requirement_holds_on_the_warm_run(tmp_path):
    """sglang's runner rejects an enabled registration in a file without `__main__`: the warm run
    must know the file has none (a fact the facts did not carry before)."""
    from checks.scanning.tree import MemoryTree

    files = {p: DirectoryTree(TARGETS / "sglang" / "r2026-08-22-382343f").read(p)
             for p in DirectoryTree(TARGETS / "sglang" / "r2026-08-22-382343f").paths()}
    path = "test/registered/attention/test_no_main.py"
    files[path] = b'from sglang.test.ci.ci_register import register_cuda_ci\n\nregister_cuda_ci(est_time=60, suite="base-a-test-cpu")\n'
    cache = DiskScanCache(tmp_path)
    runs = [check_tree(MemoryTree(files), config_text=SGLANG_CONFIG, scan_cache=cache) for _ in range(2)]
    assert cache.hits > 0
    main = [[f.rule for f in r.findings if f.file == path and "__main__" in f.message] for r in runs]
    assert main[0] == main[1] == ["REG002"]


def test_the_index_on_postgresql_answers_the_same_report(pg_url):
    """The same through the store the App scales out on (facts are JSON text in either database)."""
    from bot.analysis.bounded import run_check_bounded
    from bot.store.db import upgrade
    from bot.store.index import RegistrationIndex

    root = TARGETS / "sglang" / "r2026-08-22-382343f"
    upgrade(pg_url)
    cold = check_tree(DirectoryTree(root), config_text=SGLANG_CONFIG)
    repo = f"o/r-{root.name}"
    indexes = [RegistrationIndex(pg_url, repo) for _ in range(2)]
    reports = [run_check_bounded(ShaTree(root), scan_cache=index, config_text=SGLANG_CONFIG, timeout_s=60) for index in indexes]
    assert indexes[0].writes > 0 and indexes[1].hits > 0 and indexes[1].misses == 0
    _same(cold, reports[0], "first indexed run (PostgreSQL)")
    _same(cold, reports[1], "indexed run (PostgreSQL)")
    assert any(r.composed_suite for r in reports[1].registrations)


def test_an_edit_of_the_runner_that_moves_its_lines_keeps_the_index_warm():
    """sglang edits test/run_suite.py every few days; the scans of its test files do not change,
    so the contract fingerprint (the index key) must not either."""
    from checks.config.schema import load_config
    from checks.target.contract import read_contract
    from checks.scanning.tree import MemoryTree

    root = TARGETS / "sglang" / "r2026-03-07-0f62da6"
    files = {p: DirectoryTree(root).read(p) for p in DirectoryTree(root).paths()}
    config, _ = load_config(SGLANG_CONFIG)
    before = scan_facts.contract_fingerprint(read_contract(MemoryTree(files), config))
    files["test/run_suite.py"] = b"# a new comment line\n" * 3 + files["test/run_suite.py"]
    after = read_contract(MemoryTree(files), config)
    assert after.unknown_suite_warns and after.notes  # both moved with the lines
    assert scan_facts.contract_fingerprint(after) == before

"""Analysis limits: each input a pull request could use to stop the App completes in bounded time
with a REG902 finding (or is read in linear time), and the child-process runner stops what the
engine's own caps cannot."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from types import SimpleNamespace

import pytest

from bot.analysis.bounded import AnalysisError, LimitExceeded, budget_from_env, run_check_bounded
from bot.analysis.sources import GitHubTree
from checks.config.schema import load_config
from checks.engine import check_tree
from checks.limits import Limits
from checks.model import Severity, code
from checks.reporting.render import check_run_summary, md_code, md_message, suggestion_comment
from checks.scanning.tree import GitRevisionTree, MemoryTree
from tests.fixtures import attacks
from tests.fixtures.miles import RUN_SUITE, miles_tree, test_file
from tests.patience import PATIENCE

BOUND_S = 5.0  # CPU seconds: each input takes well under a second
P = "tests/e2e/test_new.py"


def rules_of(findings):
    return {f.rule for f in findings}


def limit_findings(report, limit: str):
    return [f for f in report.findings if f.rule == "REG902" and f"analysis limit reached: {limit} = " in f.message]


def timed(fn):
    """Run `fn` in this process and bound the CPU it spends (not wall time: other processes on a
    loaded machine stretch the wall clock, while an unbounded input shows as CPU, which is what
    these tests are about)."""
    start = time.process_time()
    result = fn()
    spent = time.process_time() - start
    assert spent < BOUND_S, f"spent {spent:.1f} s of CPU"
    return result


def check(extra: dict[str, str], **kw):
    return timed(lambda: check_tree(MemoryTree(miles_tree(**extra)), **kw))


def check_diff(extra: dict[str, str], **kw):
    return timed(lambda: check_tree(MemoryTree(miles_tree(**extra)), MemoryTree(miles_tree()), {p: None for p in extra}, **kw))


# -- Limits ----------------------------------------------------------------------------------------
def test_limits_defaults_fit_real_repositories():
    limits = Limits()
    assert limits.file_bytes >= 1024 * 1024 and limits.resolved_names >= 10_000 and limits.shards >= 256
    assert limits.matrix_combinations >= 256 and limits.files >= 20_000


def test_limits_from_env():
    limits = Limits.from_env({"CI_REGISTRAR_LIMIT_FILE_BYTES": "1000", "CI_REGISTRAR_LIMIT_SHARDS": "8", "PATH": "/bin"})
    assert limits.file_bytes == 1000 and limits.shards == 8 and limits.resolved_names == Limits().resolved_names
    assert Limits.from_env({}) == Limits()


@pytest.mark.parametrize("env, error", [
    ({"CI_REGISTRAR_LIMIT_SHARDS": "many"}, "CI_REGISTRAR_LIMIT_SHARDS='many': expected a positive integer"),
    ({"CI_REGISTRAR_LIMIT_SHARDS": "0"}, "expected a positive integer"),
    ({"CI_REGISTRAR_LIMIT_SHARD": "8"}, "CI_REGISTRAR_LIMIT_SHARD names no analysis limit"),
])
def test_limits_from_env_errors(env, error):
    with pytest.raises(ValueError, match=re.escape(error)):
        Limits.from_env(env)


def test_ordinary_tree_has_no_limit_findings_and_the_same_findings_under_any_caps():
    report = check_tree(MemoryTree(miles_tree()))
    assert "REG902" not in rules_of(report.findings)
    roomy = Limits(file_bytes=10**9, ast_nodes=10**9, yaml_nodes=10**9, resolved_names=10**9, shards=10**9, matrix_combinations=10**9, files=10**9)
    assert check_tree(MemoryTree(miles_tree()), limits=roomy) == report


# -- the attacks -----------------------------------------------------------------------------------
def test_doubling_inventory_stops_at_the_names_cap():
    report = check(attacks.doubling_inventory())
    (f,) = limit_findings(report, "resolved_names")
    assert f.file == attacks.RUN_SUITE and f.severity is Severity.WARNING
    assert "CI_REGISTRAR_LIMIT_RESOLVED_NAMES" in f.message and "REG010" in f.message
    # the CPU suites could not be read: no registration fails REG010 on CPU because of it
    assert not [x for x in report.findings if x.rule == "REG010" and "cpu suite" in x.message]


def test_doubling_labels_stops_at_the_names_cap():
    bad_label = test_file('register_rocm_ci(est_time=10, suite="nightly-stage-c-4-gpu-mi350", labels=["whatever"])')
    report = check({**attacks.doubling_labels(), P: bad_label})
    (f,) = limit_findings(report, "resolved_names")
    assert f.file == attacks.LABELS and "labels" in f.message
    assert "REG002" not in rules_of(report.findings)  # labels are not checked, not guessed


def test_partition_size_workflow_is_not_split_into_a_billion_shards():
    report = check(attacks.partition_size_workflow())
    (f,) = limit_findings(report, "shards")
    assert f.file == attacks.WORKFLOW and "REG030" in f.message and "1,000,000,000 shards" in f.message
    assert "REG030" not in rules_of(report.findings)


def test_alias_bomb_workflow_is_refused_before_expansion():
    report = check(attacks.alias_bomb_workflow())
    (f,) = limit_findings(report, "yaml_nodes")
    assert f.file == attacks.WORKFLOW and "REG013" in f.message
    assert "REG013" not in rules_of(report.findings)  # a consumer may hide in the unread workflow


def test_aliased_steps_times_a_450_value_matrix_read_in_linear_time():
    report = check(attacks.flat_alias_workflow())
    stale = [f for f in report.findings if f.rule == "REG014" and f.file == attacks.WORKFLOW]
    assert len(stale) == 450  # every matrix suite is read, once
    assert "REG902" not in rules_of(report.findings)


def test_distinct_strings_times_a_full_matrix_read_in_linear_time():
    suites = ", ".join(f"stage-m-{i}" for i in range(4000))
    steps = "".join(f"      - run: step{i} run_suite.py --suite ${{{{ matrix.suite }}}}\n" for i in range(5_000))
    workflow = f"on: push\njobs:\n  j:\n    strategy:\n      matrix:\n        suite: [{suites}]\n    steps:\n{steps}"
    report = check({attacks.WORKFLOW: workflow})
    assert len([f for f in report.findings if f.rule == "REG014"]) == 4000


def test_matrix_over_the_combinations_cap():
    axis = ", ".join(str(i) for i in range(100))
    workflow = ("on: push\njobs:\n  wide:\n    strategy:\n      matrix:\n"
                f"        a: [{axis}]\n        b: [{axis}]\n        suite: [stage-a-cpu]\n"
                "    steps:\n      - run: run_suite.py --suite ${{ matrix.suite }}\n")
    report = check({attacks.WORKFLOW: workflow})
    (f,) = limit_findings(report, "matrix_combinations")
    assert "`wide`" in f.message and f.span.line == 3


def test_ten_thousand_key_config_is_validated_in_linear_time():
    report = check(attacks.wide_config())
    (f,) = [x for x in report.findings if x.rule == "REG900"]
    assert "hardware.label-bad" in f.message and f.span.line == 10_001


def test_config_alias_bomb_fails_the_check():
    text = "x: &a0 [stage-a-cpu]\n" + "".join(f"y{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10))
    config, findings = timed(lambda: load_config(text))
    (f,) = findings
    assert f.rule == "REG902" and f.severity is Severity.FAILURE and "yaml_nodes" in f.message


def test_two_thousand_star_references_after_a_comment_block():
    report = check(attacks.starred_references())
    assert "REG902" not in rules_of(report.findings)
    assert not [f for f in report.findings if f.rule in ("REG010", "REG901")]


def test_starred_references_keep_the_comment_above_each_entry():
    from checks.config.schema import Config
    from checks.target.contract import read_contract

    contract = read_contract(MemoryTree(attacks.starred_references(references=3, comment_lines=2)), Config())
    cpu = contract.suites[next(b for b in contract.suites if b.value == "cpu")]
    assert cpu["stage-a-cpu"].comment == "consumed by workflow 0 consumed by workflow 1"


def test_two_hundred_thousand_suite_names():
    report = check(attacks.many_suites())  # over the byte cap as written; over the names cap if not
    assert [f for f in report.findings if f.rule == "REG902" and f.file == attacks.RUN_SUITE]
    report = check(attacks.many_suites(), limits=Limits(file_bytes=10**8, ast_nodes=10**8))
    assert limit_findings(report, "resolved_names")


def test_million_statement_file_is_not_parsed():
    extra = attacks.huge_test_file()
    assert len(extra["tests/e2e/test_huge.py"]) > 6_000_000
    report = check_diff(extra)
    (f,) = limit_findings(report, "file_bytes")
    assert f.file == "tests/e2e/test_huge.py" and "REG004" in f.message
    assert not [x for x in report.findings if x.file == f.file and x.rule != "REG902"]


def test_dense_file_under_the_byte_cap_is_not_parsed():
    report = check_diff(attacks.dense_test_file())
    (f,) = limit_findings(report, "ast_nodes")
    assert f.file == "tests/e2e/test_dense.py"
    assert not [x for x in report.findings if x.file == f.file and x.rule != "REG902"]


def test_files_cap():
    extra = {f"tests/e2e/test_{i}.py": test_file('register_cpu_ci(est_time=1, suite="stage-a-cpu")') for i in range(5)}
    report = check(extra, limits=Limits(files=4))
    (f,) = limit_findings(report, "files")
    assert "not read" in f.message
    assert report.files_checked < 7


def test_did_you_mean_over_a_large_inventory_is_bounded():
    extra = attacks.many_suites(19_000)
    for i in range(300):
        extra[f"tests/e2e/test_u{i}.py"] = test_file(f'register_cpu_ci(est_time=1, suite="stage-z-{i}-cpx")')
    report = check(extra)
    unknown = [f for f in report.findings if f.rule == "REG010" and f.file.startswith("tests/e2e/test_u")]
    assert len(unknown) == 300  # every verdict is kept; only hints past the comparison budget are dropped
    assert "did you mean" in unknown[0].message


def test_near_names_keeps_the_nightly_rename_past_its_budget():
    from checks.target.suites import NearNames

    near = NearNames(budget=1)
    candidates = {"nightly-stage-c-4-gpu-mi350", "stage-c-2-gpu-mi350"}
    assert near.correction("stage-c-4-gpu-mi350", candidates, "rocm") == "nightly-stage-c-4-gpu-mi350"
    assert near.close("stage-c-4-gpu-mi35", candidates, "rocm") == []


# -- ** in the inventory ---------------------------------------------------------------------------
SPREAD = '''\
from tests.ci.ci_register import HWBackend

BASE = {
    HWBackend.CPU: ["stage-a-cpu", "stage-b-cpu"],
    HWBackend.CUDA: ["stage-b-2-gpu-h200", "stage-c-8-gpu-h100", "stage-c-8-gpu-h200", "stage-c-4-gpu-h200", "stage-c-2-gpu-h200"],
    HWBackend.ROCM: ["old-rocm-suite"],
}
CI_SUITES = {**BASE, HWBackend.ROCM: ["stage-c-4-gpu-mi350", "nightly-stage-c-8-gpu-mi350", "nightly-stage-c-4-gpu-mi350", "nightly-stage-c-2-gpu-mi350"]}
'''


def test_dict_unpacking_in_the_inventory_is_resolved():
    report = check_tree(MemoryTree(miles_tree(**{"tests/ci/run_suite.py": SPREAD})))
    assert not [f for f in report.findings if f.rule in ("REG010", "REG901", "REG902")]
    base = check_tree(MemoryTree(miles_tree()))
    assert [f for f in report.findings if f.file != "tests/ci/run_suite.py"] == [f for f in base.findings if f.file != "tests/ci/run_suite.py"]


def test_dict_unpacking_later_keys_win():
    rocm = test_file('register_rocm_ci(est_time=10, suite="old-rocm-suite", labels=["long"])')
    report = check_tree(MemoryTree(miles_tree(**{"tests/ci/run_suite.py": SPREAD, P: rocm})))
    assert [f for f in report.findings if f.rule == "REG010" and f.file == P]


def test_unresolvable_dict_unpacking_is_reg901_and_skips_reg010():
    text = RUN_SUITE.replace("    ],\n}", "    ],\n    **build(),\n}")
    bogus = test_file('register_rocm_ci(est_time=10, suite="stage-q-4-gpu-mi350", labels=["long"])')
    report = check_tree(MemoryTree(miles_tree(**{"tests/ci/run_suite.py": text, P: bogus})))
    assert any(f.rule == "REG901" and "**build()" in f.message for f in report.findings)
    assert "REG010" not in rules_of(report.findings)  # build() may set any backend: not guessed


# -- symlinks --------------------------------------------------------------------------------------
class FakeGitHub:
    """client.tree / client.blob over an in-memory git tree (mode 120000: a symlink)."""

    def __init__(self, files: dict[str, str], links: dict[str, str]):
        self.blobs: dict[str, bytes] = {}
        self.entries = []
        for path, content in {**files, **links}.items():
            sha = f"{len(self.blobs):040x}"
            self.blobs[sha] = content.encode()
            self.entries.append({"path": path, "type": "blob", "sha": sha, "mode": "120000" if path in links else "100644", "size": len(content)})
        self.github = SimpleNamespace(blobs=SimpleNamespace(get=lambda sha: self.blobs.get(sha)), graphql_cut=None)  # GraphQL has cut no text yet
        self.fetched: list[str] = []

    def tree(self, repo, sha):
        return {"tree": self.entries, "truncated": False}

    def blob(self, repo, sha):
        self.fetched.append(sha)
        return self.blobs[sha]


LINKED = "tests/e2e/test_linked.py"
REAL = "common/real_test.py"


@pytest.mark.parametrize("target, readable", [
    ("../../common/real_test.py", True),  # relative, inside the tree
    ("/etc/passwd", False),  # absolute
    ("../../../outside.py", False),  # climbs above the root
    ("../../common", False),  # a directory
    ("test_loop.py", False),  # a loop of links
    ("missing.py", False),
])
def test_github_tree_symlinks(target, readable):
    files = miles_tree(**{REAL: test_file('register_cpu_ci(est_time=1, suite="stage-a-cpu")')})
    client = FakeGitHub(files, {LINKED: target, "tests/e2e/test_loop.py": "test_linked.py"})
    tree = GitHubTree(client, "o/r", "sha")
    assert LINKED in tree.paths()
    assert (tree.read(LINKED) == files[REAL].encode()) is readable
    report = check_tree(tree)
    linked = [f for f in report.findings if f.file == LINKED]
    assert linked == [] and "REG004" not in rules_of(report.findings)
    assert any(r.file == LINKED for r in report.registrations) is readable


def test_github_tree_never_fetches_an_oversized_link():
    client = FakeGitHub(miles_tree(), {LINKED: "x" * 5000})
    tree = GitHubTree(client, "o/r", "sha")
    assert tree.read(LINKED) is None and client.fetched == []


def test_git_revision_tree_symlink(tmp_path):
    repo = tmp_path / "repo"
    (repo / "tests/e2e").mkdir(parents=True)
    (repo / "common").mkdir()
    (repo / "common/real_test.py").write_text(test_file('register_cpu_ci(est_time=1, suite="stage-a-cpu")'))
    (repo / LINKED).symlink_to("../../common/real_test.py")
    (repo / "tests/e2e/test_out.py").symlink_to("../../../elsewhere.py")
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True)
    tree = GitRevisionTree(repo, "HEAD")
    assert tree.read(LINKED) == (repo / "common/real_test.py").read_bytes()
    assert tree.read("tests/e2e/test_out.py") is None


# -- escaping --------------------------------------------------------------------------------------
def _outside_code(markdown: str) -> str:
    """The text of `markdown` outside CommonMark code spans and fenced blocks (written apart from
    checks.reporting.render so the test does not grade its own tokenizer)."""
    out, i = [], 0
    lines = markdown.split("\n")
    kept, fence = [], None
    for line in lines:  # fenced blocks
        m = re.match(r"^(`{3,})", line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line.startswith(fence) and line.strip("`") == "":
            fence = None
        elif fence is None:
            kept.append(line)
    text = "\n".join(kept)
    while i < len(text):
        if text[i] == "\\":
            out.append(text[i : i + 2])
            i += 2
            continue
        if text[i] == "`":
            j = i
            while j < len(text) and text[j] == "`":
                j += 1
            run = text[i:j]
            k = j
            close = -1
            while k < len(text):
                if text[k] == "`":
                    m = k
                    while m < len(text) and text[m] == "`":
                        m += 1
                    if m - k == len(run):
                        close = k
                        break
                    k = m
                else:
                    k += 1
            if close >= 0:
                i = close + len(run)
                continue
            out.append(run)
            i = j
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


NASTY = "stage-x`` @org/team [link](https://evil.example) ``` `"


def _unsafe(markdown: str) -> list[str]:
    text = _outside_code(markdown)
    return re.findall(r"@[A-Za-z0-9]|https?://|www\.|\]\(|<(?!/?(?:details|summary)>)[a-z]", text)


def test_code_span_holds_any_text():
    for text in ["plain", "a`b", "``x``", "`", " x ", NASTY]:
        span = code(text)
        fence = re.match(r"`+", span).group()
        inner = span[len(fence) : -len(fence)]
        assert "`" * len(fence) not in inner
        assert (inner[1:-1] if inner.startswith(" ") and inner.endswith(" ") and inner.strip() else inner) == text


def test_suite_with_backticks_and_a_mention_never_escapes_in_the_summary():
    src = test_file(f'register_cpu_ci(est_time=1, suite="{NASTY}")')
    report = check_tree(MemoryTree(miles_tree(**{P: src})))
    assert any(f.rule == "REG010" for f in report.findings)
    summary = check_run_summary(report)
    # the App's own links to its rules' docs are the only links; the PR's text makes none
    from checks.rule_docs import DOCS_URL

    own_links = re.compile(r"\[REG\d{3}\]\(" + re.escape(DOCS_URL) + r"#reg\d{3}\)")
    assert own_links.search(summary)
    assert _unsafe(own_links.sub("REGnnn", summary)) == []
    assert md_code(NASTY) in summary  # shown, whole, as code


def test_suggestion_comment_escapes_the_message():
    src = test_file('register_cpu_ci(est_time=1, suite="stage-a-cpux")')
    report = check_tree(MemoryTree(miles_tree(**{P: src})))
    f = next(f for f in report.findings if f.fix is not None)
    import dataclasses

    f.message = f"suite `{NASTY}` and @org/team see https://evil.example"
    f.fix = dataclasses.replace(f.fix, text=f.fix.text + "\n# ```` inside")
    body = suggestion_comment(f)
    assert _unsafe(body) == []
    assert "```````suggestion" not in body and re.search(r"^`{5,}suggestion$", body, re.M)


def test_md_message_keeps_ordinary_messages_readable():
    assert md_message("suite `stage-a-cpu` is fine") == "suite `stage-a-cpu` is fine"


# -- the child-process runner ----------------------------------------------------------------------
ROOMY = Limits(resolved_names=10**15)


def test_bounded_run_returns_the_in_process_report():
    head = MemoryTree(miles_tree(**{P: test_file('register_cpu_ci(est_time=1, suite="stage-a-cpux")')}))
    assert run_check_bounded(head, timeout_s=60, memory_bytes=1 << 30) == check_tree(head)
    base = MemoryTree(miles_tree())
    changed = {P: None}
    assert run_check_bounded(head, base, changed, config_text=None, timeout_s=60, memory_bytes=1 << 30) == check_tree(head, base, changed, config_text=None)


def test_bounded_run_stops_at_its_time_limit():
    endless = "from tests.ci.ci_register import HWBackend\nA0 = []\n" + "".join(f"A{i} = A{i - 1} + A{i - 1}\n" for i in range(1, 60)) + "CI_SUITES = {HWBackend.CPU: A59}\n"
    start = time.perf_counter()
    outcome = run_check_bounded(MemoryTree(miles_tree(**{"tests/ci/run_suite.py": endless})), limits=ROOMY, timeout_s=2, memory_bytes=1 << 30)
    assert isinstance(outcome, LimitExceeded) and outcome.limit == "timeout_s" and outcome.value == 2
    assert time.perf_counter() - start < PATIENCE  # stopped: the input alone would never end


def _stuck_engine(head, base, changed, **kw):
    head.read("tests/ci/run_suite.py")
    threading.Event().wait()  # forever, spending no CPU


def test_a_run_stopped_at_its_time_limit_names_the_last_file_the_engine_read():
    # The limit is generous here (the child reads its first file whatever the machine's load),
    # and the engine stuck after that read costs no CPU while it waits to be stopped.
    outcome = run_check_bounded(MemoryTree(miles_tree()), timeout_s=PATIENCE / 4, memory_bytes=1 << 30,
                                engine="tests.checks.test_limits:_stuck_engine")
    assert isinstance(outcome, LimitExceeded) and outcome.limit == "timeout_s"
    assert outcome.file == "tests/ci/run_suite.py"


def _hungry_engine(head, base, changed, **kw):
    head.read("tests/ci/run_suite.py")
    hoard = []
    while True:
        hoard.append(bytearray(16 * 1024 * 1024))


def test_bounded_run_stops_at_its_memory_limit():
    start = time.perf_counter()
    outcome = run_check_bounded(MemoryTree(miles_tree()), timeout_s=60, memory_bytes=256 * 1024 * 1024, engine="tests.checks.test_limits:_hungry_engine")
    assert isinstance(outcome, LimitExceeded) and outcome.limit == "memory_bytes" and outcome.value == 256 * 1024 * 1024
    assert outcome.file == "tests/ci/run_suite.py"
    assert time.perf_counter() - start < PATIENCE


def _raising_engine(head, base, changed, **kw):
    raise RuntimeError("engine bug")


def test_bounded_run_raises_what_the_engine_raises():
    with pytest.raises(AnalysisError, match="engine bug"):
        run_check_bounded(MemoryTree(miles_tree()), timeout_s=60, memory_bytes=1 << 30, engine="tests.checks.test_limits:_raising_engine")


def test_limit_exceeded_is_a_neutral_check_run():
    conclusion, output, annotations = LimitExceeded("memory_bytes", 1 << 30, "it needed more than 1024 MiB", "tests/e2e/@org/team`x.py").check_run()
    assert conclusion == "neutral" and annotations == []
    assert "memory_bytes" in output["title"] and "1024 MiB" in output["title"]
    assert "CI_REGISTRAR_ANALYSIS_MEMORY_MB" in output["summary"] and _unsafe(output["summary"]) == []


def test_analysis_budget_from_env():
    assert budget_from_env({}) == (60.0, 1024 * 1024 * 1024)
    assert budget_from_env({"CI_REGISTRAR_ANALYSIS_TIMEOUT_S": "5", "CI_REGISTRAR_ANALYSIS_MEMORY_MB": "512"}) == (5.0, 512 * 1024 * 1024)
    with pytest.raises(ValueError, match="CI_REGISTRAR_ANALYSIS_TIMEOUT_S"):
        budget_from_env({"CI_REGISTRAR_ANALYSIS_TIMEOUT_S": "soon"})
    with pytest.raises(ValueError, match="CI_REGISTRAR_ANALYSIS_MEMORY_MB"):
        budget_from_env({"CI_REGISTRAR_ANALYSIS_MEMORY_MB": "1.5"})


def test_run_check_completes_neutral_on_a_limit(monkeypatch):
    from bot.worker.handlers import pull_requests

    updates = []
    from bot.github.client import _LRU

    client = SimpleNamespace(
        installation_id=1, github=SimpleNamespace(consumers=_LRU()),
        check_runs_for_ref=lambda repo, sha, name: [],
        create_check_run=lambda repo, body: {"id": 7, **body},
        pull_files=lambda repo, number, expected=None: [{"filename": P, "status": "added"}],
        file_at=lambda repo, path, ref: None,
        update_check_run=lambda repo, run_id, body: updates.append(body),
        tree=lambda repo, sha: {"tree": []},
    )
    ctx = SimpleNamespace(client=client, settings=SimpleNamespace(app_id=None), delivery_id="d1", report_on_failure=lambda *a, **k: None,
                          log=SimpleNamespace(info=lambda *a, **k: None, warning=lambda *a, **k: None), store_url=None)
    recorded = {}
    monkeypatch.setattr(pull_requests, "stored_durations", lambda *a: None)  # no store in this test
    monkeypatch.setattr(pull_requests, "run_check_bounded", lambda *a, **k: LimitExceeded("timeout_s", 60, "it ran longer than 60 s", P))
    monkeypatch.setattr(pull_requests.store, "record_check_run", lambda url, **kw: recorded.update(kw))
    monkeypatch.setattr(pull_requests.store, "has_check_run", lambda *a: False)
    monkeypatch.setattr(pull_requests.store, "note_check_run_create", lambda *a: None)
    monkeypatch.setattr(pull_requests, "post_suggestions", lambda *a, **k: pytest.fail("no suggestions without a report"))
    pull_requests.run_check(ctx, repo="o/r", head_sha="h", base_sha="b", number=1, rerun=False, default_branch="main")
    final = updates[-1]
    assert final["conclusion"] == "neutral" and recorded["conclusion"] == "neutral"
    assert "timeout_s" in final["output"]["title"] and P in final["output"]["summary"]


def test_directory_tree_symlink_stays_inside_the_checkout(tmp_path):
    from checks.scanning.tree import DirectoryTree

    root = tmp_path / "checkout"
    (root / "tests/e2e").mkdir(parents=True)
    (root / "common").mkdir()
    (root / "common/real_test.py").write_text("x = 1\n")
    (tmp_path / "secret.py").write_text("secret\n")
    (root / LINKED).symlink_to("../../common/real_test.py")
    (root / "tests/e2e/test_out.py").symlink_to(tmp_path / "secret.py")
    tree = DirectoryTree(root)
    assert tree.read(LINKED) == b"x = 1\n"
    assert tree.read("tests/e2e/test_out.py") is None


def _reporting_engine(head, base, changed, *, config_text=None, limits=None, **arguments):
    return {"arguments": arguments, "config_text": config_text}


def test_a_bounded_engine_gets_its_arguments():
    answer = run_check_bounded(MemoryTree(miles_tree()), config_text=b"x", timeout_s=60, memory_bytes=1 << 30,
                               engine="tests.checks.test_limits:_reporting_engine", arguments={"suite": "s", "files": ("a",)})
    assert answer == {"arguments": {"suite": "s", "files": ("a",)}, "config_text": b"x"}
    plain = run_check_bounded(MemoryTree(miles_tree()), config_text=None, timeout_s=60, memory_bytes=1 << 30,
                              engine="tests.checks.test_limits:_reporting_engine")
    assert plain["arguments"] == {}

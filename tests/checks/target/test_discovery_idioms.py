"""Discovery as the runner does it, in every idiom (checks/target/runner.py, checks/target/contract.py), and the
severity of an unknown suite under a runner that only warns.

The sglang trees are excerpts of sgl-project/sglang (tests/fixtures/targets/sglang/, Apache-2.0);
each expected registration set is what bench/fidelity_collector.py (sglang's own ci_register and
run_suite.py, started in `test/` as its workflows start it) gives for that excerpt. The other
trees are small synthetic runners, one idiom each.
"""

from __future__ import annotations


import pytest

from checks.config.schema import load_config
from checks.target.contract import read_contract
from checks.engine import check_tree
from checks.scanning.tree import DirectoryTree, MemoryTree
from tests import FIXTURES
from tests.fixtures.sglang import SGLANG_CONFIG

SGLANG = FIXTURES / "targets" / "sglang"
SGLANG_DEC = SGLANG / "r2025-12-21-a92de89"
SGLANG_MAR = SGLANG / "r2026-03-07-0f62da6"


def keys(report) -> set[tuple]:
    return {(r.file, r.backend.value, r.suite, float(r.est_time)) for r in report.registrations}


def by_file(report, rule: str) -> dict[str, str]:
    return {f.file: f.severity.value for f in report.findings if f.rule == rule}


# -- sglang, March 2026: `glob.glob("registered/**/*.py")` from test/ -----------------------------

def test_sglang_march_relative_glob_is_read_from_the_runners_directory():
    report = check_tree(DirectoryTree(SGLANG_MAR), config_text=SGLANG_CONFIG)
    assert keys(report) == {
        ("test/registered/spec/eagle/test_deepseek_v3_fp4_mtp_small.py", "cuda", "stage-b-test-4-gpu-b200", 900.0),
        ("test/registered/amd/accuracy/mi30x/test_deepseek_v31_eval_amd.py", "amd", "nightly-amd-accuracy-8-gpu-deepseek-v31", 3600.0),
        ("test/registered/amd/accuracy/mi30x/test_deepseek_r1_eval_amd.py", "amd", "nightly-amd-accuracy-8-gpu-deepseek-r1", 7200.0),
    }
    # the runner's excludes: `not f.endswith("/conftest.py") and not f.endswith("/__init__.py")`
    assert not [f for f in report.findings if f.rule == "REG004"]
    assert not [f for f in report.findings if f.rule == "REG901"]


def test_sglang_march_unknown_suite_a_job_runs_is_a_warning_and_one_none_runs_fails():
    """That runner prints "Warning: Unknown suite" and runs what a job names (it validated
    nothing until April 2026)."""
    report = check_tree(DirectoryTree(SGLANG_MAR), config_text=SGLANG_CONFIG)
    reg010 = {f.file: f for f in report.findings if f.rule == "REG010"}
    run = reg010["test/registered/amd/accuracy/mi30x/test_deepseek_v31_eval_amd.py"]
    assert run.severity.value == "warning"
    assert "only prints \"Unknown suite\" and runs it anyway" in run.message
    assert ".github/workflows/nightly-test-amd-rocm720.yml:" in run.message and "--nightly" in run.message
    stale = reg010["test/registered/amd/accuracy/mi30x/test_deepseek_r1_eval_amd.py"]
    assert stale.severity.value == "warning" and "never runs" not in stale.message
    # no job runs the other: "this test never runs" is REG013's one finding, a failure
    never = {f.file: f for f in report.findings if f.rule == "REG013"}["test/registered/amd/accuracy/mi30x/test_deepseek_r1_eval_amd.py"]
    assert never.severity.value == "failure"
    assert never.message.startswith("this test never runs: no job runs suite `nightly-amd-accuracy-8-gpu-deepseek-r1` for AMD")


def test_a_job_without_the_nightly_flag_does_not_run_a_nightly_registration():
    files = {p: DirectoryTree(SGLANG_MAR).read(p) for p in DirectoryTree(SGLANG_MAR).paths()}
    wf = ".github/workflows/nightly-test-amd-rocm720.yml"
    files[wf] = files[wf].replace(b" --nightly --timeout", b" --timeout")
    report = check_tree(MemoryTree(files), config_text=SGLANG_CONFIG)
    assert by_file(report, "REG013")["test/registered/amd/accuracy/mi30x/test_deepseek_v31_eval_amd.py"] == "failure"


# -- sglang, December 2025: `if nightly: glob("**/*.py")` / `else: glob("registered/**/*.py")` ------

def test_sglang_december_branches_discover_what_either_branch_finds():
    report = check_tree(DirectoryTree(SGLANG_DEC), config_text=SGLANG_CONFIG)
    assert keys(report) == {
        ("test/nightly/ascend/llm_models/test_ascend_afm_4_5b.py", "npu", "nightly-1-npu-a3", 400.0),
        ("test/registered/function_call/test_function_call_parser.py", "cpu", "default", 1.0),
        ("test/registered/lora/test_lora.py", "cuda", "stage-b-test-small-1-gpu", 82.0),
    }
    # test/srt/... (and run_suite.py itself) are globbed only by the nightly branch, which collects
    # with sanity_check=False: the runner skips them with a warning
    assert by_file(report, "REG004") == {"test/srt/ascend/test_ascend_deepep.py": "warning", "test/run_suite.py": "warning"}
    # the excerpt has no workflow: each registration's test never runs (REG013), and nothing else fails
    assert {f.rule for f in report.findings if f.severity.value == "failure"} == {"REG013"}


def test_sglang_december_an_unregistered_file_under_the_strict_branch_fails():
    files = {p: DirectoryTree(SGLANG_DEC).read(p) for p in DirectoryTree(SGLANG_DEC).paths()}
    files["test/registered/lora/test_unregistered.py"] = b"import unittest\n"
    report = check_tree(MemoryTree(files), config_text=SGLANG_CONFIG)
    assert by_file(report, "REG004")["test/registered/lora/test_unregistered.py"] == "failure"


# -- synthetic runners, one idiom each ----------------------------------------------------------

REGISTER = '''
def register_cuda_ci(est_time: float, suite: str, nightly: bool = False, disabled=None):
    return None

def collect_tests(files, sanity_check: bool = True):
    return []
'''
CONFIG = "paths:\n  register_module: ci/ci_register.py\n  suites_module: ci/run_suite.py\nconsumers: []\n"
TEST = 'from ci.ci_register import register_cuda_ci\n\nregister_cuda_ci(est_time=10, suite="s")\n'
HEAD = "import glob\nimport os\nfrom pathlib import Path\n\nfrom ci.ci_register import collect_tests\n\nSUITES = {HWBackend.CUDA: [\"s\"]}\n\n\ndef run_a_suite(args):\n"


def target(body: str, **files: str) -> dict[str, str]:
    out = {"ci/ci_register.py": REGISTER, "ci/run_suite.py": HEAD + body, ".github/ci-registrar.yml": CONFIG}
    out.update(files)
    return out


IDIOMS = {
    "relative to the runner's directory": '    files = glob.glob("reg/**/*.py", recursive=True)\n',
    "relative to the root": '    files = glob.glob("ci/reg/**/*.py", recursive=True)\n',
    "os.chdir to the runner's directory": '    os.chdir(os.path.dirname(os.path.abspath(__file__)))\n    files = glob.glob("reg/**/*.py", recursive=True)\n',
    "os.chdir with Path(__file__).parent": '    os.chdir(Path(__file__).parent)\n    files = glob.glob("reg/**/*.py", recursive=True)\n',
    "Path(__file__).parent / dir, glob": '    files = list((Path(__file__).resolve().parent / "reg").glob("**/*.py"))\n',
    "Path(__file__).parent.rglob": '    files = sorted(Path(__file__).parent.rglob("test_*.py"))\n',
    "rglob with an exclude on the name": '    files = [f for f in (Path(__file__).parent / "reg").rglob("*.py") if f.name != "conftest.py" and not f.name.startswith("_")]\n',
    "relative glob with excludes": '    files = [f for f in glob.glob("reg/**/*.py", recursive=True) if not f.endswith("/conftest.py") and "/helpers/" not in f]\n',
}


@pytest.mark.parametrize("idiom", IDIOMS, ids=list(IDIOMS))
def test_each_discovery_idiom_reads_the_runners_files(idiom):
    files = target(IDIOMS[idiom] + "    all_tests = collect_tests(files)\n",
                   **{"ci/reg/a/test_one.py": TEST, "ci/reg/b/test_two.py": TEST,
                      "ci/reg/conftest.py": "import pytest\n", "ci/reg/helpers/_util.py": "x = 1\n"})
    report = check_tree(MemoryTree(files))
    assert {r.file for r in report.registrations} == {"ci/reg/a/test_one.py", "ci/reg/b/test_two.py"}, idiom
    assert not [f for f in report.findings if f.rule == "REG901"], idiom
    unregistered = {f.file for f in report.findings if f.rule == "REG004"}
    if "exclude" in idiom:
        assert unregistered == set()  # the runner's excludes are the engine's
    assert not unregistered & {"ci/reg/a/test_one.py", "ci/reg/b/test_two.py"}


def test_a_discovery_that_reads_no_file_while_tests_exist_fails_with_reg901():
    files = target('    files = glob.glob("nowhere/**/*.py", recursive=True)\n    all_tests = collect_tests(files)\n',
                   **{"tests/e2e/test_one.py": TEST})
    report = check_tree(MemoryTree(files))
    (f,) = [f for f in report.findings if f.rule == "REG901"]
    assert f.severity.value == "failure" and report.failed
    assert "reads no file" in f.message and "`nowhere/**/*.py`" in f.message and "tests/e2e/test_one.py" in f.message


def test_a_discovery_that_cannot_be_read_fails_with_reg901_naming_it():
    files = target('    files = glob.glob("*.py", root_dir=os.environ["ROOT"])\n    all_tests = collect_tests(files)\n',
                   **{"tests/e2e/test_one.py": TEST})
    config, _ = load_config(CONFIG)
    contract = read_contract(MemoryTree(files), config)
    (f,) = [f for f in contract.findings if f.rule == "REG901"]
    assert f.severity.value == "failure" and "root_dir" in f.message
    assert check_tree(MemoryTree(files)).failed


def test_a_runner_that_runs_nothing_in_a_tree_without_tests_is_not_an_error():
    files = target('    files = glob.glob("reg/**/*.py", recursive=True)\n    all_tests = collect_tests(files)\n')
    report = check_tree(MemoryTree(files))
    assert not [f for f in report.findings if f.rule == "REG901"]


def test_a_file_a_workflow_runs_itself_is_a_warning_under_a_warn_only_runner():
    """sglang's AMD nightlies ran `python3 registered/test_grok_perf.py` in test/ until January
    2026: the registration's suite is selected by no job, but the test runs."""
    files = {p: DirectoryTree(SGLANG_MAR).read(p) for p in DirectoryTree(SGLANG_MAR).paths()}
    wf = ".github/workflows/nightly-test-amd-rocm720.yml"
    files[wf] += (b"      - name: direct\n        run: |\n"
                  b"          bash scripts/ci/amd/amd_ci_exec.sh -w /sglang-checkout/test python3 registered/amd/accuracy/mi30x/test_deepseek_r1_eval_amd.py\n")
    report = check_tree(MemoryTree(files), config_text=SGLANG_CONFIG)
    (f,) = [f for f in report.findings if f.rule == "REG010" and f.file.endswith("test_deepseek_r1_eval_amd.py")]
    assert f.severity.value == "warning" and "runs the file itself" in f.message and f"{wf}:" in f.message


class UnlistedTree(MemoryTree):
    """The App's PR base: read at known paths only, no listing (bot.analysis.sources.GitHubTree(listed=False))."""

    listed = False

    def paths(self):
        raise TypeError("an unlisted tree has no listing: read it at known paths")


def test_a_diff_against_an_unlisted_base_reads_the_base_from_the_runners_directory():
    files = {p: DirectoryTree(SGLANG_MAR).read(p) for p in DirectoryTree(SGLANG_MAR).paths()}
    path = "test/registered/amd/accuracy/mi30x/test_deepseek_v31_eval_amd.py"
    head = dict(files)
    head[path] = files[path].replace(b"register_amd_ci(", b"pass  # register_amd_ci(", 1)
    report = check_tree(MemoryTree(head), UnlistedTree(files), {path: path}, config_text=SGLANG_CONFIG)
    assert [(f.rule, f.file) for f in report.findings if f.rule == "REG050"] == [("REG050", path)]


# -- "no job runs this": one severity in every era and for every backend -------------------------
_NOWHERE = '''from sglang.test.ci.ci_register import register_{backend}_ci

register_{backend}_ci(est_time=60, suite="nightly-{backend}-nowhere-1-gpu", nightly=True)
register_{backend}_ci(est_time=60, suite="nightly-{backend}-somewhere-1-gpu", nightly=True)

if __name__ == "__main__":
    pass
'''
_SOMEWHERE = '''name: nightly
on:
  schedule:
    - cron: "0 0 * * *"
jobs:
  run:
    runs-on: ubuntu-latest
    steps:
      - run: cd test && python3 run_suite.py --hw {backend} --suite nightly-{backend}-somewhere-1-gpu --nightly
'''


@pytest.mark.parametrize("era", ["r2026-03-07-0f62da6", "r2026-08-22-382343f"])
@pytest.mark.parametrize("backend", ["amd", "npu"])
def test_a_suite_no_job_runs_fails_and_one_a_job_runs_warns_in_every_era_and_backend(tmp_path, era, backend):
    """March 2026: the runner only prints "Unknown suite"; August 2026: it validates some backends'
    suites, never AMD's nor NPU's. Either way the runner lets these names through: no job runs the
    one (the test never runs), a job runs the other (it runs)."""
    import shutil

    tree = tmp_path / "sglang"
    shutil.copytree(SGLANG / era, tree)
    (tree / f"test/registered/{backend}").mkdir(parents=True, exist_ok=True)
    (tree / f"test/registered/{backend}/test_zz_{backend}.py").write_text(_NOWHERE.format(backend=backend))
    (tree / ".github/workflows").mkdir(parents=True, exist_ok=True)
    (tree / ".github/workflows/zz-nightly.yml").write_text(_SOMEWHERE.format(backend=backend))
    report = check_tree(DirectoryTree(tree), config_text=SGLANG_CONFIG)
    ours = {f.message.split("`")[1]: f for f in report.findings
            if f.rule == "REG010" and f.file == f"test/registered/{backend}/test_zz_{backend}.py"}
    stale, runs = ours[f"nightly-{backend}-nowhere-1-gpu"], ours[f"nightly-{backend}-somewhere-1-gpu"]
    assert stale.severity.value == "warning" and "never runs" not in stale.message
    assert runs.severity.value == "warning" and ".github/workflows/zz-nightly.yml:" in runs.message
    # the test no job runs: REG013's one finding, the same words in every era and backend
    never = [f for f in report.findings if f.rule == "REG013" and f.file == f"test/registered/{backend}/test_zz_{backend}.py"]
    assert [(f.severity.value, f.message.split(":")[0]) for f in never] == [("failure", "this test never runs")]
    assert f"no job runs suite `nightly-{backend}-nowhere-1-gpu` for {backend.upper()}" in never[0].message

"""The reviewer's summary (checks/reporting/pr_summary.py, checks/render.check_run_summary): the seed PR
(miles #2480, vendored by tests/fixtures/targets/vendor_seed_pr.py) as `check --format summary`
prints it, and the registration-only verdict on small cases."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from checks.reporting.pr_summary import same_code
from tests import FIXTURES, REPO
from tests.simulator.fixtures import github_sim  # noqa: F401 - the simulated GitHub
from tests.bot.test_cli import cli
from tests.bot.commands.test_seed_pr import git

TARGETS = FIXTURES / "targets"
SEED = TARGETS / "miles" / "seed-pr-babb429"
NIGHTLY = TARGETS / "sglang" / "workflows-382343f" / "nightly-test-amd-miles-rocm720.yml"
NIGHTLY_SUITES = ("nightly-stage-c-2-gpu-mi350", "nightly-stage-c-4-gpu-mi350", "nightly-stage-c-8-gpu-mi350")


@pytest.fixture(scope="module")
def seed_pr(tmp_path_factory) -> Path:
    """A git repository: the vendored parent, then the PR's own patch on it."""
    repo = tmp_path_factory.mktemp("seed") / "miles"
    shutil.copytree(SEED / "base", repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "parent of babb42903")
    subprocess.run(["git", "-C", str(repo), "apply", str(SEED / "pr.patch")], check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "babb42903 [AMD CI] Enable verified ROCm tests (#2480)")
    return repo


def _check(repo: Path, fmt: str):
    done = cli("check", "--repo", str(repo), "--base", "HEAD~1", "--consumers-from", str(NIGHTLY), "--format", fmt)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def _rows(summary: str, suite: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in summary.splitlines()
            if line.startswith(f"| `{suite}` |")]


def test_the_seed_pr_is_registration_only_with_gpu_hours_for_each_nightly_suite(seed_pr):
    summary = _check(seed_pr, "summary")
    doc = json.loads(_check(seed_pr, "json"))
    first = summary.split("\n\n")
    assert first[0].startswith("**Passed") or first[0].startswith("**Failure")  # the verdict first
    assert first[1].startswith("**Registration-only: yes.**"), first[1]
    # 34 test files, the inventory (run_suite.py) and the documentation: 36 paths, as the PR has
    assert "34 test files" in first[1] and "1 suite inventory" in first[1] and "1 documentation file" in first[1]
    changes = {c: sum(1 for r in doc["registrations"] if r["change"] == c) for c in ("added", "changed", "removed")}
    assert f"{changes['added']} added, {changes['changed']} changed, {changes['removed']} removed" in first[1]
    include, admit = _miles_selection(seed_pr, "nightly")
    pools = _consumer_pools()
    for suite in NIGHTLY_SUITES:
        rows = _rows(summary, suite)
        assert len(rows) == 1, suite
        row = rows[0]
        est = sum(r["est_time"] for r in doc["registrations"] if r["suite"] == suite and r["disabled"] is None)
        assert row[3] == f"0 s → {est:g} s"
        # the consumer cell is the step of the job that runs the suite (its matrix row), cadence from that job
        line, gpus = pools[suite]
        assert row[4] == f"`sgl-project/sglang:.github/workflows/nightly-test-amd-miles-rocm720.yml:{line}`"
        assert row[5] == "nightly"
        # GPU-hours per run: what that job selects (miles' own resolve_policy for `--cadence nightly`,
        # run as a yardstick) x the GPUs of the pool it runs on (the 4-GPU suite runs on an 8-GPU pool)
        selected = sum(r["est_time"] for r in doc["registrations"] if r["suite"] == suite and r["disabled"] is None
                       and (not r["nightly"] or admit) and (not r["labels"] or set(r["labels"]) & include))
        assert row[7] == f"0.00 → {selected * gpus / 3600:.2f} ({gpus} GPUs)"
        assert row[8].startswith("0 runs")  # no stored run backs these est_times
        assert f"`/run-rocm {suite}`" in summary
    # the seed PR's 2-GPU nightly: its job selects 1,320 s of the 17,020 s registered (`long` is left out)
    assert _rows(summary, "nightly-stage-c-2-gpu-mi350")[0][6].startswith("1: 0 s → 1320 s / 180 min")


def _miles_selection(repo: Path, cadence: str) -> tuple[set[str], bool]:
    """miles' own `resolve_policy(cadence, set())`, run in the checkout: (include labels, admits nightly)."""
    code = ("import json; from tests.ci.ci_policy import resolve_policy; from tests.ci.labels import KNOWN_LABELS; "
            f"p = resolve_policy({cadence!r}, set()); "
            "print(json.dumps([sorted(p.include_labels), bool(p.admit_nightly_tests)]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(repo), "PATH": "/usr/bin:/bin"})
    include, admit = json.loads(done.stdout)
    return set(include), admit


def _consumer_pools() -> dict[str, tuple[int, int]]:
    """suite -> (line of its matrix row, GPUs of its runner label), read with plain YAML and text."""
    doc = yaml.safe_load(NIGHTLY.read_text())
    lines = NIGHTLY.read_text().split("\n")
    out = {}
    for job in doc["jobs"].values():
        for row in (job.get("strategy") or {}).get("matrix", {}).get("include", []):
            line = next(i + 1 for i, text in enumerate(lines) if text.strip() == f"- suite: {row['suite']}")
            out[row["suite"]] = (line, int(re.search(r"gpu-(\d+)", row["runner"]).group(1)))
    return out


def test_the_text_count_is_the_json_count_implicit_and_removed_included(seed_pr, tmp_path):
    # a tests/fast file without a call (the runner's implicit CPU registration) and a removed one
    repo = tmp_path / "miles"
    shutil.copytree(seed_pr, repo)
    (repo / "tests/fast").mkdir(parents=True)
    (repo / "tests/fast/test_plain.py").write_text("def test_plain():\n    pass\n")
    (repo / "tests/e2e/short/test_dumper.py").unlink()
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "implicit and removed")
    for args in ((), ("--base", "HEAD~1")):
        done = [cli("check", "--repo", str(repo), *args, "--consumers-from", str(NIGHTLY), "--format", fmt)
                for fmt in ("json", "text")]
        doc = json.loads(done[0].stdout)
        implicit = sum(1 for r in doc["registrations"] if r["implicit"])
        assert implicit >= 1
        assert f"{len(doc['registrations'])} registrations ({implicit} implicit)" in done[1].stdout.splitlines()[-1]
        if args:
            assert any(r["change"] == "removed" for r in doc["registrations"])
            # the summary's registrations by change add up to the JSON's too
            summary = cli("check", "--repo", str(repo), *args, "--consumers-from", str(NIGHTLY), "--format", "summary").stdout
            parts = re.search(r"Registrations: (\d+) added, (\d+) changed, (\d+) removed, (\d+) unchanged(?:, (\d+) implicit)?",
                              summary)
            assert sum(int(n or 0) for n in parts.groups()) == len(doc["registrations"])


def test_findings_come_failures_first_and_link_their_rule(seed_pr, tmp_path):
    # one more commit: a registration on a suite nobody declares (a failure) in a file sorted last
    repo = tmp_path / "miles"
    shutil.copytree(seed_pr, repo)
    path = repo / "tests/e2e/short/test_dumper.py"
    path.write_text(path.read_text().replace('suite="nightly-stage-c-8-gpu-mi350"', 'suite="nightly-stage-c-8-gpu-mi351"', 1))
    git(repo, "commit", "-qam", "typo")
    done = cli("check", "--repo", str(repo), "--base", "HEAD~2", "--consumers-from", str(NIGHTLY), "--format", "summary")
    table = [line for line in done.stdout.splitlines() if line.startswith("| [REG")]
    severities = [line.split(" | ")[1] for line in table]
    assert severities[0] == "failure" and severities == sorted(severities, key=["failure", "warning", "notice"].index)
    assert all(re.match(r"\| \[(REG\d+)\]\(https://[^)]+#reg\d+\)", line) for line in table)


# -- registration-only: the same AST once registrations are set aside -----------------------------
BASE = b'''import os
from tests.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=60, suite="stage-b-2-gpu-h200", labels=["short"])


def test_x():
    assert os.sep
'''


def test_moving_or_adding_a_registration_and_its_import_is_the_same_code():
    head = BASE.replace(b"import register_cuda_ci", b"import register_cuda_ci, register_rocm_ci").replace(
        b"\n\ndef test_x", b'register_rocm_ci(\n    est_time=800,\n    suite="nightly-stage-c-4-gpu-mi350",\n    labels=["long"],\n)\n\n\ndef test_x')
    assert same_code(BASE, head)
    assert same_code(BASE, BASE.replace(b"est_time=60", b"est_time=90"))


@pytest.mark.parametrize("edit", [
    (b"assert os.sep", b"assert os.linesep"),  # the test body
    (b"import os\n", b"import os\nimport sys\n"),  # another import
    (b"from tests.ci.ci_register import register_cuda_ci", b"from tests.ci.ci_register import register_cuda_ci, HWBackend"),
    (b'register_cuda_ci(est_time', b'x = register_cuda_ci(est_time'),  # no longer a bare registration
])
def test_any_other_change_is_not(edit):
    assert not same_code(BASE, BASE.replace(*edit))


def test_a_file_that_does_not_parse_is_never_the_same():
    assert not same_code(BASE, BASE + b"def (")


INVENTORY = b'''from tests.ci.ci_register import HWBackend

CI_SUITES = {HWBackend.ROCM: ["stage-c-4-gpu-mi350"]}


def main():
    return CI_SUITES
'''


def test_an_inventory_may_change_its_tables_but_not_its_code():
    renamed = INVENTORY.replace(b'["stage-c-4-gpu-mi350"]', b'["stage-c-4-gpu-mi350", "nightly-stage-c-4-gpu-mi350"]')
    assert same_code(INVENTORY, renamed, inventory=True)
    assert not same_code(INVENTORY, renamed)  # a test file's tables are its code
    assert not same_code(INVENTORY, INVENTORY.replace(b"return CI_SUITES", b"return {}"), inventory=True)
    assert not same_code(INVENTORY, INVENTORY.replace(b'CI_SUITES = {', b'CI_SUITES = compute() or {'), inventory=True)


# -- the App posts the same summary ------------------------------------------------------------
DOC = REPO / "docs" / "summary.md"


def _files_at(repo: Path, rev: str) -> dict[str, bytes]:
    names = git(repo, "ls-tree", "-r", "--name-only", rev).split()
    return {n: subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{n}"], check=True, capture_output=True).stdout
            for n in names}


def app_summary(sim, tmp_path: Path, repo: Path) -> str:
    """The seed PR opened on the simulator (miles and sglang's nightly, the App installed on both):
    the summary of the CI registrations check run the App completes."""
    from app import create_app
    from bot.worker.handlers.pull_requests import CHECK_NAME
    from bot.worker.queue import QueueConfig, open_queue
    from bot.infra.settings import load_settings
    from bot.store.db import upgrade
    from tests.service_support import World, env_for

    gh_app = sim.create_app(name="CI Registrar", owner="radixark")
    miles = sim.create_repo("radixark/miles", default_branch="main")
    miles.commit(_files_at(repo, "HEAD~1"), branch="main")
    miles.commit(_files_at(repo, "HEAD"), branch="enable-rocm", replace=True)
    sglang = sim.create_repo("sgl-project/sglang", default_branch="main")
    sglang.commit({".github/workflows/nightly-test-amd-miles-rocm720.yml": NIGHTLY.read_bytes()}, branch="main")
    sim.install(gh_app, "radixark/miles", "sgl-project/sglang")
    pr = sim.open_pull_request(miles, "enable-rocm", "main", author="bob")
    settings = load_settings(env_for(sim, gh_app, tmp_path))
    upgrade(settings.database_url)
    queue = open_queue(settings, config=QueueConfig(f"s-{tmp_path.name[-8:]}", None, str(tmp_path / "queue.db"), 30))
    world = World(sim, gh_app, miles, None, settings, queue, create_app(settings, queue=queue), pr)
    world.deliver(sim.webhook("pull_request", "opened", app=gh_app, repo=miles, pull=pr, sender="bob"))
    world.drain()
    [run] = sim.check_runs(miles, sha=pr.head_sha, name=CHECK_NAME)
    assert run["status"] == "completed"
    return run["output"]["summary"]


def test_the_app_posts_what_format_summary_prints_and_the_docs_show_it(github_sim, seed_pr, tmp_path, monkeypatch):
    monkeypatch.setenv("CI_REGISTRAR_HTTP_BACKOFF_S", "0.01")
    posted = app_summary(github_sim, tmp_path, seed_pr)
    assert posted == _check(seed_pr, "summary").rstrip("\n")
    # docs/summary.md shows the seed PR's summary exactly as posted (between its markers)
    text = DOC.read_text()
    shown = text.split("<!-- seed-pr-summary:start -->\n", 1)[1].split("\n<!-- seed-pr-summary:end -->", 1)[0]
    assert shown == posted, "docs/summary.md is stale: regenerate it with `python -m tests.checks.reporting.test_pr_summary`"


def main() -> None:  # python -m tests.checks.reporting.test_pr_summary: writes the posted summary into docs/summary.md
    import tempfile

    from tests.simulator.core import GitHubSimulator

    sim = GitHubSimulator()
    sim.start()
    try:
        tmp_path = Path(tempfile.mkdtemp())
        repo = tmp_path / "miles"
        shutil.copytree(SEED / "base", repo)
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "parent")
        subprocess.run(["git", "-C", str(repo), "apply", str(SEED / "pr.patch")], check=True)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "pr")
        posted = app_summary(sim, tmp_path, repo)
    finally:
        sim.stop()
        shutil.rmtree(tmp_path, ignore_errors=True)
    assert sim.violations == [], sim.violations
    text = DOC.read_text()
    head, rest = text.split("<!-- seed-pr-summary:start -->\n", 1)
    tail = rest.split("<!-- seed-pr-summary:end -->", 1)[1]
    DOC.write_text(f"{head}<!-- seed-pr-summary:start -->\n{posted}\n<!-- seed-pr-summary:end -->{tail}")


if __name__ == "__main__":
    main()


# -- diff mode: a PR that removes the job running a suite is told what it orphans ----------------
def test_removing_the_consuming_job_flags_the_suites_it_leaves_on_that_pr(tmp_path):
    from tests.fixtures.miles import miles_tree, test_file
    from tests.bot.commands.test_seed_pr import write

    repo = tmp_path / "miles"
    write(repo, miles_tree(**{
        ".github/ci-registrar.yml": "consumers: []\n",
        "tests/e2e/test_gate.py": test_file('register_rocm_ci(est_time=60, suite="stage-c-4-gpu-mi350", labels=["amd"])'),
    }))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    before = json.loads(cli("check", "--repo", str(repo), "--format", "json").stdout)
    assert not [f for f in before["findings"] if f["file"] == "tests/e2e/test_gate.py" and f["rule"] == "REG013"]
    (repo / ".github/workflows/pr-test-rocm.yml").unlink()  # the only job running stage-c-4-gpu-mi350
    git(repo, "commit", "-qam", "drop the ROCm PR job")
    done = cli("check", "--repo", str(repo), "--base", "HEAD~1", "--new-only", "--format", "json")
    new = [f for f in json.loads(done.stdout)["findings"] if f["file"] == "tests/e2e/test_gate.py"]
    assert [f["rule"] for f in new] == ["REG013"]  # on the PR that removed the job, untouched file or not
    assert "stage-c-4-gpu-mi350" in new[0]["message"]


def test_new_only_follows_a_suite_rename_its_unchanged_findings_are_not_new(tmp_path):
    """sglang b7d62bd72 renamed stage-a/b/c to base-a/b/c in 473 files: 53 old warnings came back as
    new. A registration whose only change is its suite keeps its findings' identity."""
    from tests.fixtures.miles import RUN_SUITE, miles_tree, test_file
    from tests.bot.commands.test_seed_pr import write

    def tree(suite: str, straggler: str) -> dict[str, str]:
        return miles_tree(**{
            ".github/ci-registrar.yml": "consumers: []\n",  # nobody runs the nightly suites: REG013
            "tests/ci/run_suite.py": RUN_SUITE.replace('"nightly-stage-c-2-gpu-mi350"', f'"{suite}"'),
            "tests/e2e/test_a.py": test_file(f'register_rocm_ci(est_time=60, suite="{suite}", labels=["long"])'),
            "tests/e2e/test_b.py": test_file(f'register_rocm_ci(est_time=60, suite="{straggler}", labels=["long"])'),
        })

    repo = tmp_path / "miles"
    write(repo, tree("nightly-stage-c-2-gpu-mi350", "nightly-stage-c-2-gpu-mi350"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    write(repo, tree("nightly-stage-d-2-gpu-mi350", "nightly-stage-c-2-gpu-mi350"))  # test_b.py forgotten
    git(repo, "commit", "-qam", "rename the suite")
    whole = json.loads(cli("check", "--repo", str(repo), "--base", "HEAD~1", "--format", "json").stdout)
    assert [f["rule"] for f in whole["findings"] if f["file"] == "tests/e2e/test_a.py"] == ["REG013"]  # as at base
    done = cli("check", "--repo", str(repo), "--base", "HEAD~1", "--new-only", "--format", "json")
    new = [(f["rule"], f["file"]) for f in json.loads(done.stdout)["findings"]]
    assert ("REG013", "tests/e2e/test_a.py") not in new  # the same finding, under the new name
    assert ("REG010", "tests/e2e/test_b.py") in new  # what the rename broke is new


def test_stored_runs_back_the_est_times_and_statistics_alone_verify_nothing(seed_pr, tmp_path):
    doc = json.loads(_check(seed_pr, "json"))
    two = sorted(r["file"] for r in doc["registrations"] if r["suite"] == "nightly-stage-c-2-gpu-mi350")
    rows = [{"file": f, "backend": "rocm", "hardware": "MI355X", "n": 3 + i, "median": 600, "p90": 700, "max": 800}
            for i, f in enumerate(two)]  # every file of the 2-GPU suite measured: 3 + 4 + ... runs
    path = tmp_path / "durations.json"
    path.write_text(json.dumps(rows))
    done = cli("check", "--repo", str(seed_pr), "--base", "HEAD~1", "--consumers-from", str(NIGHTLY),
               "--durations-file", str(path), "--format", "summary")
    [row] = _rows(done.stdout, "nightly-stage-c-2-gpu-mi350")
    assert row[8] == f"{sum(3 + i for i in range(len(two)))} runs over {len(two)} of {len(two)} files"
    # statistics without their runs (`durations show`) back est_time, but name no run: not evidence
    # (checks/calibration/evidence.py), so the suite still needs measuring; miles' own fleet has no
    # 2-GPU runner (the job runs on sglang's), so the run plan refuses it and the summary says why
    section = done.stdout.split("#### Evidence on each suite's hardware", 1)[1].split("\n#### ", 1)[0].split("<details>", 1)[0]
    evidence_rows = [line for line in section.splitlines()
                     if "| `nightly-stage-c-2-gpu-mi350` |" in line]
    assert len(evidence_rows) == len(two) and all(line.endswith("| not verified |") for line in evidence_rows)
    assert ("`/run-rocm nightly-stage-c-2-gpu-mi350` is not offered: no runner of this repository's fleet has the 2 GPUs"
            in done.stdout)
    assert "`/run-rocm nightly-stage-c-8-gpu-mi350` is not offered" in done.stdout
    # the run plan's reason keeps its code spans (md_message), not escaped backticks
    refusals = [line for line in done.stdout.splitlines() if " is not offered: " in line]
    assert refusals and all("\\`" not in line for line in refusals)
    assert any("the 2 GPUs `nightly-stage-c-2-gpu-mi350` needs" in line for line in refusals)
    [row] = _rows(done.stdout, "nightly-stage-c-8-gpu-mi350")
    assert row[8].startswith("0 runs")

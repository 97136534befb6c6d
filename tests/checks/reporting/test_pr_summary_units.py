"""checks/reporting/pr_summary.py's own fast tests, in-process (tests/checks/reporting/test_pr_summary.py runs the
command line, which a mutant in this process never reaches): the registration-only verdict of an
inventory, and the per-suite table's consumers, their selection, shards and GPU-hours (issue 37)."""

from __future__ import annotations

import pytest

from checks.engine import check_tree
from checks.reporting.pr_summary import _gpus, _longest, same_code, suite_rows
from checks.scanning.tree import MemoryTree
from tests.fixtures.miles import RUN_SUITE, miles_tree, test_file

SUITE = "stage-c-4-gpu-mi350"  # run by miles' PR job, two partitions, 180 minutes
NIGHTLY_JOB = f'''\
name: Nightly (ROCm)
on:
  schedule:
    - cron: "0 3 * * *"
jobs:
  nightly:
    runs-on: [self-hosted, amd, mi350, 4gpu]
    timeout-minutes: 300
    steps:
      - run: python3 tests/ci/run_suite.py --hw rocm --suite {SUITE} --nightly
'''


def _diff(changes: dict[str, str | None], base_extra: dict[str, str] | None = None):
    base = miles_tree(**{".github/ci-registrar.yml": "consumers: []\n", **(base_extra or {})})
    head = {p: c for p, c in {**base, **changes}.items() if c is not None}
    changed = {p: (p if p in base else None) for p in changes}
    report = check_tree(MemoryTree(head), MemoryTree(base), changed, fixes=False)
    assert report.pr_summary is not None
    return report.pr_summary


# -- registration-only -----------------------------------------------------------------------------
def test_an_inventory_whose_tables_change_is_registration_only():
    summary = _diff({"tests/ci/run_suite.py": RUN_SUITE.replace('"nightly-stage-c-2-gpu-mi350",',
                                                                '"nightly-stage-c-2-gpu-mi350",\n        "nightly-stage-d-2-gpu-mi350",')})
    assert summary.registration_only and summary.inventories == 1 and summary.other == 0 and summary.reasons == []
    (row,) = [r for r in summary.rows if r.suite == "nightly-stage-d-2-gpu-mi350"]  # a suite the inventory gained
    assert (row.files_before, row.files_after, row.consumers) == (0, 0, [])


def test_an_inventory_whose_code_changes_is_not_registration_only():
    summary = _diff({"tests/ci/run_suite.py": RUN_SUITE + "\n\ndef helper():\n    return 1\n"})
    assert not summary.registration_only and summary.inventories == 0 and summary.other == 1
    assert summary.reasons == ["tests/ci/run_suite.py: code outside the suite inventory changed"]


def test_a_test_file_added_removed_or_changed_in_its_code_is_not_registration_only():
    added = _diff({"tests/e2e/test_new.py": test_file(f'register_rocm_ci(est_time=60, suite="{SUITE}", labels=["amd"])')})
    assert not added.registration_only and added.reasons == ["tests/e2e/test_new.py: test file added"]
    base = {"tests/e2e/test_x.py": test_file(f'register_rocm_ci(est_time=60, suite="{SUITE}", labels=["amd"])')}
    removed = _diff({"tests/e2e/test_x.py": None}, base)
    assert not removed.registration_only and removed.reasons == ["tests/e2e/test_x.py: test file removed"]
    recalibrated = _diff({"tests/e2e/test_x.py": base["tests/e2e/test_x.py"].replace("est_time=60", "est_time=90")}, base)
    assert recalibrated.registration_only and recalibrated.test_files == 1
    coded = _diff({"tests/e2e/test_x.py": base["tests/e2e/test_x.py"] + "\n\ndef test_more():\n    assert 1\n"}, base)
    assert coded.reasons == ["tests/e2e/test_x.py: test code changed, not only its registrations"]


def test_documentation_workflows_and_other_files_are_counted_apart():
    summary = _diff({"docs/x.md": "# x\n", "README.rst": "x\n", ".github/workflows/extra.yml": "name: x\non: [push]\njobs: {}\n",
                     "setup.py": "x = 1\n"})
    assert (summary.docs, summary.workflows, summary.other) == (2, 1, 1)
    assert summary.reasons == ["setup.py: not a test file, suite inventory, workflow or documentation"]
    assert not summary.registration_only


def test_at_most_five_reasons_are_kept_and_every_path_is_counted():
    summary = _diff({f"tool{i}.py": "x = 1\n" for i in range(7)})
    assert len(summary.reasons) == 5 and summary.other == 7


# -- the per-suite table ---------------------------------------------------------------------------
def _nightly_rows():
    base = {".github/workflows/nightly-rocm.yml": NIGHTLY_JOB,
            "tests/e2e/test_gate.py": test_file(f'register_rocm_ci(est_time=600, suite="{SUITE}", labels=["amd"])')}
    head = {"tests/e2e/test_nightly.py": test_file(f'register_rocm_ci(est_time=3600, suite="{SUITE}", labels=["amd"], nightly=True)')}
    summary = _diff(head, base)
    (row,) = [r for r in summary.rows if r.suite == SUITE]
    return row


def test_nightly_registrations_count_for_the_nightly_consumer_only():
    row = _nightly_rows()
    by_cadence = {c.cadence: c for c in row.consumers}
    assert set(by_cadence) == {"per run", "nightly"}
    pr, nightly = by_cadence["per run"], by_cadence["nightly"]
    # the PR job runs test_gate.py (600 s) alone; the nightly job runs test_nightly.py (3600 s) too
    assert pr.gpu_hours_before == pytest.approx(600 * 4 / 3600) and pr.gpu_hours_after == pytest.approx(600 * 4 / 3600)
    assert nightly.gpu_hours_before == pytest.approx(600 * 4 / 3600)
    assert nightly.gpu_hours_after == pytest.approx((600 + 3600) * 4 / 3600)
    assert (pr.shards, nightly.shards) == (2, 1)
    assert pr.longest_after == 600 and nightly.longest_after == 4200
    assert (pr.timeout_minutes, nightly.timeout_minutes) == (180, 300) and pr.timeout_stated
    assert row.files_added == ["tests/e2e/test_nightly.py"] and (row.files_before, row.files_after) == (1, 2)
    assert (row.est_before, row.est_after, row.gpus) == (600, 4200, 4)
    # /run-rocm of a PR suite copies its PR job, which selects test_gate.py alone: the run plan's charge
    # is that file's per-file timeout bound, max(1800 s, 1.25 x 600 s), x the pool's 4 GPUs
    assert row.run_gpu_hours == pytest.approx(1800 * 4 / 3600)


def test_a_disabled_registration_is_in_the_files_but_not_the_est_time():
    base = {"tests/e2e/test_gate.py": test_file(f'register_rocm_ci(est_time=600, suite="{SUITE}", labels=["amd"])')}
    summary = _diff({"tests/e2e/test_off.py": test_file(
        f'register_rocm_ci(est_time=900, suite="{SUITE}", labels=["amd"], disabled="flaky")')}, base)
    (row,) = [r for r in summary.rows if r.suite == SUITE]
    assert (row.files_after, row.est_after) == (2, 600)
    assert all(c.gpu_hours_after == pytest.approx(600 * 4 / 3600) for c in row.consumers)


def test_a_suite_nobody_runs_has_no_consumer_and_a_cpu_suite_no_gpus():
    summary = _diff({"tests/e2e/test_new.py": test_file('register_rocm_ci(est_time=60, suite="nightly-stage-x-2-gpu-mi350", labels=["amd"])',
                                                       'register_cpu_ci(est_time=30, suite="stage-a-cpu")')})
    rows = {r.suite: r for r in summary.rows}
    assert rows["nightly-stage-x-2-gpu-mi350"].consumers == [] and rows["nightly-stage-x-2-gpu-mi350"].gpus == 2
    assert rows["stage-a-cpu"].gpus == 0 and rows["stage-a-cpu"].consumers[0].gpu_hours_after == 0
    # no job runs the new suite: there is no run to copy, so nothing is suggested (issue 35)
    assert not rows["nightly-stage-x-2-gpu-mi350"].suggest_run and not rows["stage-a-cpu"].suggest_run
    assert rows["nightly-stage-x-2-gpu-mi350"].unmeasured_added == ["tests/e2e/test_new.py"]


def test_the_small_helpers():
    assert _longest([], 2) == 0.0 and _longest([], 0) is None
    assert _gpus("stage-c-4-gpu-mi350", []) == 4 and _gpus("stage-a-cpu", []) == 0
    assert same_code(None, None) and not same_code(b"x = (", b"x = (")


# -- the same code, once registrations are set aside ------------------------------------------------
BASE = b'''import os

from tests.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=60, suite="stage-b-test-1-gpu-small")


def test_x():
    assert os.sep
'''


def test_a_registration_moved_or_added_is_the_same_code_wherever_it_sits():
    moved = BASE.replace(b'register_cuda_ci(est_time=60, suite="stage-b-test-1-gpu-small")\n', b"") + \
        b'\nregister_cuda_ci(est_time=60, suite="stage-b-test-1-gpu-small")\n'
    assert same_code(BASE, moved)  # the code's lines moved up: positions are not compared
    added = BASE.replace(b"import os\n", b"import os\n\n\n\n")
    assert same_code(BASE, added)


def test_a_block_left_with_only_registrations_is_a_block_that_does_nothing():
    guarded = b'import os\nif os.environ.get("AMD"):\n    register_rocm_ci(est_time=60, suite="s", labels=["a"])\n'
    assert same_code(guarded, b'import os\nif os.environ.get("AMD"):\n    pass\n')
    assert not same_code(guarded, b'import os\nif os.environ.get("AMD"):\n    os.sep\n')


def test_the_gpus_of_a_suite_whose_name_does_not_say():
    from types import SimpleNamespace as Reg

    assert _gpus("my-suite", [Reg(file="tests/test_a_8gpu.py"), Reg(file="tests/test_b_8gpu.py")]) == 8
    assert _gpus("my-suite", [Reg(file="tests/test_a_8gpu.py"), Reg(file="tests/test_b_2gpu.py")]) is None
    assert _gpus("my-suite", [Reg(file="tests/test_a.py")]) is None


def test_stored_runs_are_counted_per_suite_from_the_durations():
    base = {"tests/e2e/test_gate.py": test_file(f'register_rocm_ci(est_time=600, suite="{SUITE}", labels=["amd"])')}
    head = {"tests/e2e/test_new.py": test_file(f'register_rocm_ci(est_time=60, suite="{SUITE}", labels=["amd"])')}
    rows = [{"file": "tests/e2e/test_gate.py", "backend": "rocm", "hardware": "MI355X", "n": 4, "median": 500, "p90": 550,
             "max": 560, "values": [500, 550, 560, 480]}]
    tree_base = miles_tree(**{".github/ci-registrar.yml": "consumers: []\n", **base})
    report = check_tree(MemoryTree({**tree_base, **head}), MemoryTree(tree_base), {p: None for p in head}, durations=rows,
                        fixes=False)
    (row,) = [r for r in report.pr_summary.rows if r.suite == SUITE]
    assert (row.stored_runs, row.files_measured, row.files_after) == (4, 1, 2)
    assert row.unmeasured_added == ["tests/e2e/test_new.py"]


def test_a_registration_moved_to_another_suite_touches_both():
    base = {"tests/e2e/test_x.py": test_file(f'register_rocm_ci(est_time=600, suite="{SUITE}", labels=["amd"])')}
    summary = _diff({"tests/e2e/test_x.py": base["tests/e2e/test_x.py"].replace(SUITE, "nightly-stage-c-4-gpu-mi350")}, base)
    rows = {r.suite: r for r in summary.rows}
    assert set(rows) >= {SUITE, "nightly-stage-c-4-gpu-mi350"}
    assert rows[SUITE].files_removed == ["tests/e2e/test_x.py"] and rows["nightly-stage-c-4-gpu-mi350"].files_added == ["tests/e2e/test_x.py"]


def test_a_file_the_runner_registered_implicitly_counts_before_its_registration():
    """A tests/fast file with no registration is the runner's stage-a-cpu file of est_time 1: a PR
    that registers it explicitly changes its est_time, not the suite's file count."""
    base = {"tests/fast/test_f.py": "def test_it():\n    assert True\n"}
    summary = _diff({"tests/fast/test_f.py": test_file('register_cpu_ci(est_time=30, suite="stage-a-cpu")')}, base)
    (row,) = summary.rows
    assert (row.suite, row.files_added, row.files_before, row.files_after) == ("stage-a-cpu", [], 2, 2)
    assert (row.est_before, row.est_after) == (2.0, 31.0)  # miles' other tests/fast file is implicit too


# -- same_code compares statement by statement: the verdict of the whole files' shapes -----------------
DIFFERENTIAL = b'''# -*- a comment -*-
"""Doc."""
import os
from tests.ci.ci_register import register_cuda_ci, register_rocm_ci as rr
from tests.ci.ci_register import register_amd_ci

register_cuda_ci(est_time=60, suite="stage-b-test-1-gpu-small")
x = 1; register_amd_ci(est_time=5, suite="s")
CI_SUITES = {"a": [1, 2]}


@pytest.mark.parametrize("v", ["\xc3\xa9t\xc3\xa9"])
def test_x(v):
    from tests.ci.ci_register import register_cuda_ci
    if v:
        register_cuda_ci(est_time=1, suite="nested")
    assert os.sep


class T:
    def test_y(self):
        return "\xe2\x9c\x93"
'''
_EDITS = [
    (b"", b""),
    (b'est_time=60', b'est_time=90'),
    (b'"stage-b-test-1-gpu-small")\n', b'"stage-b-test-1-gpu-small")\nregister_rocm_ci(est_time=9, suite="r")\n'),
    (b"register_cuda_ci, register_rocm_ci as rr", b"register_cuda_ci, register_rocm_ci as rr, register_npu_ci"),
    (b"register_cuda_ci, register_rocm_ci as rr", b"register_cuda_ci, os_sep"),
    (b"x = 1;", b"x = 2;"),
    (b"x = 1; register_amd_ci(est_time=5, suite=\"s\")", b"x = 1"),
    (b'CI_SUITES = {"a": [1, 2]}', b'CI_SUITES = {"a": [1, 2, 3]}'),
    (b'CI_SUITES = {"a": [1, 2]}', b'CI_SUITES = compute()'),
    (b'["\xc3\xa9t\xc3\xa9"]', b'["ete"]'),
    (b"@pytest.mark.parametrize", b"@pytest.mark.skip\n@pytest.mark.parametrize"),
    (b"register_cuda_ci(est_time=1, suite=\"nested\")", b"register_cuda_ci(est_time=2, suite=\"nested\")"),
    (b"register_cuda_ci(est_time=1, suite=\"nested\")", b"pass"),
    (b"register_cuda_ci(est_time=1, suite=\"nested\")", b"os.sep"),
    (b"    assert os.sep\n", b"    assert os.sep  # a comment\n\n"),
    (b'"""Doc."""', b'"""Other doc."""'),
    (b"def test_x(v):", b"def test_x(v) :"),
    (b"class T:", b"class U:"),
    (b"\n", b"\r\n"),  # the parser's own line endings: compared whole
    (b"# -*- a comment -*-", b"# -*- coding: latin-1 -*-"),  # compared whole
    (b"return", b"return ("),  # does not parse
]


@pytest.mark.parametrize("inventory", [False, True])
@pytest.mark.parametrize("old, new", _EDITS)
def test_same_code_is_the_verdict_of_the_whole_shapes(old, new, inventory):
    from checks.reporting.pr_summary import _shape

    def whole(a, b):  # the definition: the whole files' shapes, compared
        x, y = _shape(a, inventory=inventory), _shape(b, inventory=inventory)
        return x is not None and x == y

    edited = DIFFERENTIAL.replace(old, new) if old else DIFFERENTIAL
    assert same_code(DIFFERENTIAL, edited, inventory=inventory) is whole(DIFFERENTIAL, edited)
    assert same_code(edited, DIFFERENTIAL, inventory=inventory) is whole(edited, DIFFERENTIAL)


def test_same_code_verdicts_the_differential_covers():
    """The edits above reach both verdicts, through both the statement-wise and the whole path."""
    from checks.reporting.pr_summary import _plain

    assert _plain(DIFFERENTIAL) and not _plain(DIFFERENTIAL.replace(b"\n", b"\r\n"))
    assert same_code(DIFFERENTIAL, DIFFERENTIAL.replace(b"est_time=60", b"est_time=90"))
    assert same_code(DIFFERENTIAL, DIFFERENTIAL.replace(b"    assert os.sep\n", b"    assert os.sep  # c\n\n"))
    assert not same_code(DIFFERENTIAL, DIFFERENTIAL.replace(b"x = 1;", b"x = 2;"))
    assert same_code(DIFFERENTIAL, DIFFERENTIAL.replace(b"\n", b"\r\n"))
    assert not same_code(DIFFERENTIAL, DIFFERENTIAL.replace(b"class T:", b"class U:").replace(b"\n", b"\r\n"))


# -- mutation gaps (issue 37, seed 41) ---------------------------------------------------------------
def test_a_register_function_whose_name_has_underscores_is_set_aside_too():
    plain = b"import os\n\n\ndef test_x():\n    assert os.sep\n"
    registered = b'import os\nregister_amd_mi350_nightly_ci(est_time=60, suite="s")\n\n\ndef test_x():\n    assert os.sep\n'
    assert same_code(plain, registered)
    assert not same_code(plain, b'import os\nregister_amd_mi350_nightly_job(est_time=60)\n\n\ndef test_x():\n    assert os.sep\n')


def test_an_import_of_a_register_function_is_set_aside_with_its_call():
    plain = b"import os\n\n\ndef test_x():\n    assert os.sep\n"
    imported = b'import os\nfrom tests.ci.ci_register import register_rocm_ci\n\nregister_rocm_ci(est_time=60, suite="s")\n\n\n' \
               b'def test_x():\n    assert os.sep\n'
    assert same_code(plain, imported)
    # an import that also brings in a helper is code: the helper's name stays
    mixed = b'import os\nfrom tests.ci.ci_register import helper, register_rocm_ci\n\n\ndef test_x():\n    assert os.sep\n'
    assert not same_code(plain, mixed)
    assert same_code(b'import os\nfrom tests.ci.ci_register import helper\n\n\ndef test_x():\n    assert os.sep\n', mixed)


def test_a_test_files_tables_are_its_code_only_an_inventorys_are_set_aside():
    assert not same_code(b"TIMEOUT = 60\n", b"TIMEOUT = 90\n")
    assert same_code(b"TIMEOUT = 60\n", b"TIMEOUT = 90\n", inventory=True)


def test_only_a_rocm_suite_a_job_runs_is_planned():
    summary = _diff({"tests/e2e/test_new.py": test_file('register_rocm_ci(est_time=60, suite="nightly-stage-x-2-gpu-mi350", labels=["amd"])',
                                                       'register_cpu_ci(est_time=30, suite="stage-a-cpu")')})
    rows = {r.suite: r for r in summary.rows}
    # nobody runs the ROCm suite: no plan is made, so none is refused either; the CPU suite is run
    # by a job but is not /run-rocm's to plan
    assert rows["nightly-stage-x-2-gpu-mi350"].refused == "" and rows["nightly-stage-x-2-gpu-mi350"].charge is None
    assert rows["stage-a-cpu"].consumers and rows["stage-a-cpu"].refused == "" and rows["stage-a-cpu"].charge is None
    assert rows["stage-a-cpu"].run_gpu_hours is None


def test_a_suite_whose_plan_selects_nothing_at_head_has_no_charge():
    """The suite's only file is disabled at head: /run-rocm would refuse (nothing selected), so the
    row has no charge (never a charge of 0 GPU-hours for a run that cannot happen)."""
    base = {"tests/e2e/test_gate.py": test_file(f'register_rocm_ci(est_time=600, suite="{SUITE}", labels=["amd"])')}
    summary = _diff({"tests/e2e/test_gate.py": test_file(
        f'register_rocm_ci(est_time=600, suite="{SUITE}", labels=["amd"], disabled="flaky")')}, base)
    (row,) = [r for r in summary.rows if r.suite == SUITE]
    assert row.plannable and row.refused == ""
    assert row.charge is None and row.run_gpu_hours is None


# -- issue 37, the outside sample (seed 97) ------------------------------------------------------------
def test_an_inventorys_tables_are_literal_values_and_anything_computed_is_code():
    def tables_only(before: bytes, after: bytes) -> bool:
        return same_code(before, after, inventory=True)

    assert tables_only(b"X = dict(a=1)\n", b"X = dict(a=2, b=[1, 2])\n")
    assert tables_only(b"X = [HWBackend.ROCM, *OTHER]\n", b"X = frozenset({HWBackend.CUDA: ('a',)})\n")
    assert tables_only(b"X: list = []\n", b"X: list = ['a']\n")
    assert not tables_only(b"X = helper(1)\n", b"X = helper(2)\n")  # a call of anything but a container
    assert not tables_only(b"X = os.path.join('a')\n", b"X = os.path.join('b')\n")
    assert not tables_only(b"X = dict(a=f(1))\n", b"X = dict(a=f(2))\n")  # a call inside a table
    assert not tables_only(b"X = 1 + 2\n", b"X = 1 + 3\n")  # arithmetic is code
    assert not tables_only(b"X = [i for i in A]\n", b"X = [i for i in B]\n")


def test_a_suite_is_suggested_for_a_run_when_it_gains_files_to_measure_that_a_job_runs():
    row = _nightly_rows()  # test_nightly.py added, no stored run, the PR job runs the suite
    assert row.to_measure == ["tests/e2e/test_nightly.py"] and row.plannable and row.refused == ""
    assert row.suggest_run
    from dataclasses import replace

    assert not replace(row, refused="no runner").suggest_run
    assert not replace(row, unmeasured_added=[]).suggest_run
    assert not replace(row, backend="cuda").suggest_run
    assert replace(row, unmeasured_added=[], unverified=["tests/e2e/test_gate.py"]).suggest_run


def test_the_longest_shard_is_the_one_the_runner_loads_most_not_the_first():
    from types import SimpleNamespace as Reg

    regs = [Reg(file="a.py", est_time=10), Reg(file="b.py", est_time=6), Reg(file="c.py", est_time=5)]
    assert _longest(regs, 2) == 11  # a.py alone, then b.py and c.py together
    assert _longest(regs, 1) == 21 and _longest(regs, 3) == 10
    assert _longest([Reg(file="a.py", est_time=None), Reg(file="b.py", est_time=4)], 1) == 4  # no est_time: 0


def test_a_suite_nobody_is_known_to_run_says_which_consumers_were_not_read():
    """(seed 131) `unknown` is filled only for a row with no consumer while the model is incomplete."""
    from types import SimpleNamespace as NS

    def runs(distinct, complete):
        return NS(distinct=lambda backend, suite: distinct, complete=complete, selection=lambda run, regs: regs,
                  gpu_hours=lambda run, regs: 0.0, why_unknown=lambda: [("o/r:.github/workflows/x.yml", "not readable")])

    touched = {("rocm", SUITE)}
    (row,) = suite_rows([], [], touched, runs([], complete=False))
    assert row.unknown == [("o/r:.github/workflows/x.yml", "not readable")]
    (row,) = suite_rows([], [], touched, runs([], complete=True))
    assert row.unknown == []
    job = NS(where="a.yml:3", cadence="per run", job_timeout_minutes=60, timeout_minutes=60, shards=1,
             pool=NS(gpus=4, labels=("x",), text=lambda: "[x]"))
    (row,) = suite_rows([], [], touched, runs([job], complete=False))
    assert row.unknown == [] and [c.where for c in row.consumers] == ["a.yml:3"]


def test_a_test_file_exactly_at_the_file_cap_is_still_compared():
    """(seed 131) The cap (checks/limits.py `file_bytes`, 4 MiB) refuses only what is over it."""
    from checks.limits import Limits

    cap = Limits().file_bytes
    text = test_file(f'register_rocm_ci(est_time=60, suite="{SUITE}", labels=["amd"])')
    padded = text + "#" * (cap - len(text.encode()) - 1) + "\n"
    assert len(padded.encode()) == cap
    base = {"tests/e2e/test_x.py": padded}
    summary = _diff({"tests/e2e/test_x.py": padded.replace("est_time=60", "est_time=90")}, base)
    assert summary.registration_only and summary.test_files == 1
    over = padded + "#\n"
    summary = _diff({"tests/e2e/test_x.py": over.replace("est_time=60", "est_time=90")}, {"tests/e2e/test_x.py": over})
    assert not summary.registration_only

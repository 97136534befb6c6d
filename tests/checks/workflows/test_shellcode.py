"""What a step's shell runs (checks/workflows/shellcode.py): comments out, and every reader of a
step's commands agrees that a commented command, script or write is not run."""

from __future__ import annotations

import pytest

from checks.workflows.images import Shell
from checks.workflows.jobs import read_suite_jobs
from checks.workflows.runs import _direct_runs, direct_run_of, read_workflow
from checks.workflows.shellcode import shell_code


@pytest.mark.parametrize(("script", "code"), [
    ("# python3 run_suite.py --suite a\npython3 run_suite.py --suite b  # c --suite x\n",
     "\npython3 run_suite.py --suite b  \n"),
    # a `#` inside quotes, inside a word, after `\`, in `${#x}` and `$#` is text
    ('echo "a #b" \'c #d\' e#f ${#x} $# \\# g # h', 'echo "a #b" \'c #d\' e#f ${#x} $# \\# g '),
    ("a;# x\nb", "a;\nb"),
    ("a&&# x\nb|#y\n(#z\n)", "a&&\nb|\n(\n)"),
    ('echo "two\n# lines, one string" # gone', 'echo "two\n# lines, one string" '),
    ("x # don't\ny", "x \ny"),  # a quote in a comment opens nothing
    ("no comment at all", "no comment at all"),
])
def test_a_comment_is_an_unquoted_hash_at_a_words_start_to_the_lines_end(script, code):
    assert shell_code(script) == code
    assert shell_code(script).count("\n") == script.count("\n")  # lines keep their numbers


WORKFLOW = """\
on: {schedule: [{cron: '1 1 * * *'}]}
jobs:
  nightly:
    runs-on: linux-mi35x-gpu-8
    steps:
      - run: |
          # echo "IMAGE=rocm/sgl-dev:old-mi35x" >> $GITHUB_ENV
          # the real pull happens in amd_ci_start_container.sh --custom-image rocm/sgl-dev:noted-mi35x
          echo "IMAGE=rocm/sgl-dev:miles-rocm720-mi35x" >> $GITHUB_ENV  # not rocm/sgl-dev:trailing
      - run: |
          # python3 tests/ci/run_suite.py --hw rocm --suite nightly-off-8-gpu-mi350 --cadence nightly
          python3 tests/ci/run_suite.py --hw rocm --suite nightly-on-8-gpu-mi350 --cadence nightly  # see --suite x
          # python3 tests/e2e/test_retired.py
"""


def test_both_readings_of_a_job_skip_a_commented_command():
    """The consumer reading (runs.py, what REG013/REG015 point at) and the job reading (jobs.py,
    what run-plan copies) find the same suites: the one the step runs, not the one commented out
    or the `--suite x` of a note."""
    uses, findings = read_workflow(".github/workflows/n.yml", WORKFLOW)
    assert not findings
    assert [u.suite for u in uses] == ["nightly-on-8-gpu-mi350"]
    scripts_read = []
    jobs = read_suite_jobs({".github/workflows/n.yml": WORKFLOW}, runner="run_suite",
                           read_script=lambda path: scripts_read.append(path))
    assert [j.suite for j in jobs] == ["nightly-on-8-gpu-mi350"]
    # the image is the one the step writes, not the commented write, the note's or the trailing one
    assert jobs[0].image is not None and jobs[0].image.image == "rocm/sgl-dev:miles-rocm720-mi35x"
    assert scripts_read == []  # a start script named in a comment is not started


def test_a_commented_direct_run_runs_nothing():
    found: dict[str, str] = {}
    _direct_runs("ci.yml", WORKFLOW, "", found)
    assert direct_run_of(found, "tests/e2e/test_retired.py") is None
    found = {}
    _direct_runs("ci.yml", WORKFLOW.replace("# python3 tests/e2e/test_retired.py", "python3 tests/e2e/test_retired.py"), "", found)
    assert direct_run_of(found, "tests/e2e/test_retired.py") == "ci.yml:13"


def test_a_commented_write_or_assignment_is_not_made():
    shell = Shell('# echo "X=old" >> $GITHUB_ENV\necho "X=new" >> $GITHUB_ENV\n# Y=1\nY=2 # Y=3\n')
    assert shell.written("X") == "new" and shell.writes() == ["X"]
    assert shell.variable("Y") == "2"



def test_where_a_name_is_written_is_never_in_a_comment():
    from checks.workflows.runs import _Positions, _line_of

    lines = ["# nightly-a and a.b", "echo x  # nightly-a a.b", "echo 'run #1' nightly-a a.b"]
    assert _Positions(lines).find("nightly-a").line == 3  # the index of plain names
    assert _line_of(lines, "a.b").line == 3  # the line-by-line search of other names

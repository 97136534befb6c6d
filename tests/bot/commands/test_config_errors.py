"""`config validate` reports every error of the file in one run, each at its own line.

Errors of type (what msgspec refuses) and of value (checks/config/schema.py `_semantic_errors`) come
together, in line order; a `yes`, `no`, `on` or `off` that YAML 1.1 would read as a boolean gets a
hint (this file is read as YAML 1.2); a rule written by its name is reported at its own line.
"""

from __future__ import annotations

import subprocess

from checks.config.schema import load_config
from tests.conftest import CLI

FILE = """\
rules:
  REG030: warning
  unknown-suite: Off
calibration:
  include_unmerged: no
  margin: 0.5
consumers:
  - workflow: a.yml
    repository: badrepo
  - workflow: b.yml
    repository: 3
  - workflow: c.yml
    repository: x/y
    suites: [a]
    shards: 0
budgets:
  daily_gpu_hours: -1
  max_files_per_command: many
validity:
  est_time_positive: yes
dispatch:
  s1:
    workflow: not a file
"""


def test_every_error_in_one_run_at_its_line(tmp_path):
    path = tmp_path / "ci-registrar.yml"
    path.write_text(FILE)
    done = subprocess.run([CLI, "config", "validate", str(path)], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.strip().splitlines()
    where = [(int(line.split(":")[1]), line.split(": ", 2)[-1]) for line in lines]
    assert [n for n, _ in where] == [3, 5, 6, 9, 11, 15, 17, 18, 20, 23], done.stdout
    text = dict(where)
    # type errors...
    assert "Invalid enum value 'Off'" in text[3] and "write `off` in lower case" in text[3] and "(at rules.unknown-suite)" in text[3]
    assert "`no` is a string here, not a boolean" in text[5] and "write false" in text[5]
    assert "consumers[1].repository" in text[11]
    assert "max_files_per_command" in text[18]
    assert "`yes` is a string here, not a boolean" in text[20] and "write true" in text[20]
    # ...and the others, in the same run
    assert "calibration.margin must be from 1 to 10, not 0.5" in text[6]
    assert "consumers[].repository must be `owner/name`" in text[9]
    assert "consumers[].shards must be from 1 to 256, not 0" in text[15]  # consumers[2] of the file: its line
    assert "daily_gpu_hours must be from 0 to 1e+06, not -1" in text[17]
    assert "dispatch.s1.workflow must be a workflow file name" in text[23]


def test_the_defaults_are_used_when_the_file_is_invalid():
    config, findings = load_config(FILE)
    assert len(findings) == 10 and config.calibration.margin != 0.5


def test_a_quoted_yes_gets_no_boolean_hint_and_a_rule_no_says_how_to_turn_it_off():
    _config, findings = load_config('calibration:\n  include_unmerged: "no"\nrules:\n  REG040: no\n')
    first, second = findings
    assert "Expected `bool`" in first.message and "not a boolean" not in first.message
    assert second.span.line == 4 and "write `off` (or false) to turn the rule off" in second.message

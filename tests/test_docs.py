"""The generated references stay in step with their sources; `ci-registrar config` and `rule`.

docs/rules.md comes from the rule registry, docs/configuration.md and docs/ci-registrar.schema.json
from the configuration's msgspec schema, docs/on-demand-states.md from the table of an on-demand
request's states and events (bot/store/ondemand_states.py): regenerate them with `make docs` when
these tests fail.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from bot.cli import main
from checks.config.schema import Config, load_config
from checks.config.reference import defaults, defaults_yaml, json_schema, json_schema_text, missing_descriptions, reference_markdown
from checks.rule_docs import ADVICE, documented, rules_markdown
from checks.rules import RULES
from bot.store.ondemand_states import markdown as ondemand_states_markdown

ROOT = Path(__file__).resolve().parents[1]
STALE = "is stale: run `make docs` and commit the result"


def run(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    "path, generate",
    [("docs/rules.md", rules_markdown), ("docs/configuration.md", reference_markdown),
     ("docs/ci-registrar.schema.json", json_schema_text), ("docs/on-demand-states.md", ondemand_states_markdown)],
)
def test_generated_docs_are_current(path, generate):
    assert (ROOT / path).read_text() == generate(), f"{path} {STALE}"


def test_every_rule_has_docs_and_a_section():
    undocumented = [code for code, r in RULES.items() if not documented(r)]
    assert undocumented == [], "give each rule a checks/ruleset module with its docs (or ADVICE in checks/rule_docs.py)"
    assert set(ADVICE) <= set(RULES)
    text = (ROOT / "docs/rules.md").read_text()
    for code in RULES:
        assert f"\n## {code}\n" in text  # the anchor SARIF's helpUri points at: #reg010


def test_every_rule_module_is_complete():
    """One module per rule: code, name, severity, summary, fixable, and the Why/Example/How to fix docs."""
    from checks.model import Severity
    from checks.rules import rule_modules
    from checks.ruleset import REQUIRED_SECTIONS

    modules = rule_modules()
    assert len({m.CODE for m in modules}) == len(modules)
    for module in modules:
        r = RULES[module.CODE]
        assert r.module == module.__name__
        assert module.__name__.rsplit(".", 1)[-1] == f"{module.CODE.lower()}_{module.NAME.replace('-', '_')}"
        assert isinstance(module.SEVERITY, Severity) and isinstance(module.FIXABLE, bool) and module.SUMMARY
        assert [t for t, _ in r.docs if t in REQUIRED_SECTIONS] == list(REQUIRED_SECTIONS)
        assert "```" in r.section("Example")


def test_fixable_rules_are_the_ones_whose_findings_carry_fixes():
    assert {code for code, r in RULES.items() if r.fixable} == {"REG010", "REG020"}


def test_a_rule_registered_directly_still_works(monkeypatch):
    """`rule(...)` in checks/rules.py plus ADVICE in checks/rule_docs.py (the registry's older form)."""
    from checks import rule_docs, rules
    from checks.model import Severity

    monkeypatch.setattr(rules, "RULES", dict(RULES))
    monkeypatch.setattr(rule_docs, "RULES", rules.RULES)
    monkeypatch.setitem(rule_docs.ADVICE, "REG099", "Do the thing.")
    r = rules.rule("REG099", "made-up-rule", Severity.WARNING, "A rule for this test.")
    assert list(rules.RULES)[-1] == "REG902" and "REG099" in rules.RULES  # kept in code order
    assert rules.make_finding("REG099", "a.py", rules.Span.at_line(1), "m").title == "REG099 made-up-rule"
    assert rule_docs.documented(r) and "Do the thing." in rule_docs.rule_text(r) and "## REG099" in rule_docs.rules_markdown()


def test_every_configuration_key_is_described():
    assert missing_descriptions() == []
    text = (ROOT / "docs/configuration.md").read_text()
    for section in defaults():
        assert f"\n## {section}\n" in text


def test_the_json_schema_is_valid_and_accepts_exactly_what_the_loader_accepts():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(defaults())) == []
    assert list(validator.iter_errors({})) == []
    bad = {"calibration": {"margin": "x"}, "paths": {"nope": 1}}
    assert len(list(validator.iter_errors(bad))) == 2
    _config, findings = load_config(yaml.safe_dump(bad))
    assert findings  # the loader rejects it too


def test_defaults_yaml_is_the_default_configuration():
    config, findings = load_config(defaults_yaml())
    assert findings == []
    assert config == Config()
    code, out, _ = run("config", "defaults")
    assert code == 0 and out == defaults_yaml()


def test_config_validate(tmp_path):
    good = tmp_path / "good.yml"
    good.write_text("rules:\n  REG040: off\n")
    code, out, _ = run("config", "validate", str(good))
    assert code == 0 and "valid" in out

    bad = tmp_path / "bad.yml"
    bad.write_text("consumers: []\ncalibration:\n  margin: high\n")
    code, out, _ = run("config", "validate", str(bad))
    assert code == 1
    assert out.startswith(f"{bad}:3:11: ") and "calibration.margin" in out

    unknown = tmp_path / "unknown.yml"
    unknown.write_text("rules:\n  REG040: off\n  REG999: warning\n")
    code, out, _ = run("config", "validate", str(unknown))
    assert code == 1 and out.startswith(f"{unknown}:3:3: ") and "REG999" in out

    # Every error in one run, each at its line, not one per run.
    many = tmp_path / "many.yml"
    many.write_text("rules:\n  REG040: loud\n  REG030: no\ncalibration:\n  margin: lots\npaths:\n  bogus: 1\n"
                    "consumers:\n  - repository: a/b\n    workflow: x.yml\n  - repository: 3\n    workflow: y.yml\n"
                    "dispatch:\n  s1:\n    workflow: a.yml\n  s2:\n    nope: 1\n")
    code, out, _ = run("config", "validate", str(many))
    lines = out.strip().splitlines()
    assert code == 1 and [int(line.split(":")[1]) for line in lines] == [2, 3, 5, 7, 11, 17], out
    assert "rules.REG030" in lines[1] and "one of failure, warning, notice, off" in lines[1]
    assert "consumers[1].repository" in lines[4] and "dispatch.s2" in lines[5]

    # `false` means off; off, on, yes and no are words here (YAML 1.2 booleans), and `on` is explained.
    off = tmp_path / "off.yml"
    off.write_text("rules:\n  REG040: false\n  REG030: off\n")
    code, out, _ = run("config", "validate", str(off))
    assert code == 0, out
    on = tmp_path / "on.yml"
    on.write_text("rules:\n  REG040: on\n")
    code, out, _ = run("config", "validate", str(on))
    assert code == 1 and "'on'" in out and "one of failure, warning, notice, off" in out

    code, _, err = run("config", "validate", str(tmp_path / "missing.yml"))
    assert code == 2 and "cannot read" in err and len(err.strip().splitlines()) == 1

    repo = tmp_path / "repo"
    (repo / ".github").mkdir(parents=True)
    (repo / ".github/ci-registrar.yml").write_text("budgets:\n  daily_gpu_hours: -1\n")
    code, out, _ = run("config", "validate", "--repo", str(repo))
    assert code == 1 and ":2:" in out and "daily_gpu_hours" in out


def test_config_reference_and_schema_commands_print_the_docs():
    assert run("config", "reference")[1] == reference_markdown()
    assert json.loads(run("config", "schema")[1]) == json_schema()


def test_rule_command():
    code, out, _ = run("rule", "REG010")
    assert code == 0 and "unknown-suite" in out and "How to fix" in out and "rules.md#reg010" in out
    assert run("rule", "unknown-suite")[1] == out
    code, out, _ = run("rule")
    assert code == 0 and len(out.strip().splitlines()) == len(RULES)
    code, _, err = run("rule", "REG999")
    assert code == 2 and "unknown rule" in err
    assert run("rule", "--markdown")[1] == rules_markdown()


def test_no_reference_to_files_outside_the_repository():
    import subprocess

    done = subprocess.run(["git", "-C", str(ROOT), "grep", "-n", "-I", "-E", r"SPEC\.md|TARGET-REPOS|GITHUB-FACTS|\.\./shared", "--",
                           ".", ":!tests/test_docs.py"], capture_output=True, text=True)
    if done.returncode not in (0, 1):
        pytest.skip(f"git grep unavailable: {done.stderr.strip()}")
    assert done.stdout == ""


def test_shipped_sglang_configuration_is_valid_and_shown_in_readme():
    """docs/configs/sglang.yml (what a maintainer copies to .github/ci-registrar.yml) is valid, sets
    only what sglang's code does not say, and docs/configuring.md shows the same configuration."""
    text = (ROOT / "docs" / "configs" / "sglang.yml").read_text()
    config, findings = load_config(text)
    assert findings == []
    assert config.paths.register_module == "python/sglang/test/ci/ci_register.py"
    assert config.validity == Config().validity  # everything else is read from sglang's code
    page = (ROOT / "docs" / "configuring.md").read_text()
    block = page.split("# sgl-project/sglang: .github/ci-registrar.yml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(block) == yaml.safe_load(text)

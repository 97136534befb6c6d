"""What each rule means and what to do about it: the help text of SARIF rules and docs/rules.md.

The registry (checks/rules.py) holds code, name, severity and summary; this module adds the
advice. docs/rules.md is generated from both (`ci-registrar rule --markdown`), and a test fails
when it is stale or when a registered rule has no advice here.
"""

from __future__ import annotations

from checks.rules import RULES, Rule

DOCS_URL = "https://github.com/radixark/ci-registrar/blob/main/docs/rules.md"

# code -> how to fix it (Markdown; the plain-text help is derived from it)
ADVICE: dict[str, str] = {
    "REG001": "Make the file parse: fix the syntax error at the reported line, or save it as UTF-8. "
              "Until it parses, the runner cannot collect any registration from it.",
    "REG002": "Write the call the way the register function's signature accepts it: literal values "
              "(`est_time=300`, `suite=\"stage-c-4-gpu-mi350\"`, `labels=[\"long\"]`), the two positionals at "
              "most, each keyword once, no `*args`/`**kwargs`, and the required keywords present.",
    "REG003": "Call the register function by its own name, as a top-level statement of the module: "
              "`from tests.ci.ci_register import register_rocm_ci` then `register_rocm_ci(...)`, not inside "
              "`if`, a function, an expression, or through an alias or attribute.",
    "REG004": "Add a registration for every backend the test should run on, e.g. "
              "`register_rocm_ci(est_time=600, suite=\"stage-c-4-gpu-mi350\", labels=[\"long\"])`, or move "
              "the file out of the discovery roots if it is not a test the CI should run.",
    "REG010": "Use a suite from the inventory for that backend (`CI_SUITES` in the suites module). The "
              "finding names the closest suite and, when the name belongs to another backend, that backend; "
              "`ci-registrar check --fix` applies a confident correction.",
    "REG011": "Register the file with the backend that owns the suite's hardware (`-mi350` suites are ROCm, "
              "`-h100`/`-h200` suites are CUDA), or pick a suite of the backend you meant.",
    "REG012": "Nothing to fix if the move is intended: PR-gate suites run on pull requests, `nightly-` suites "
              "run only in the nightly workflows the finding names. Check the new consumer runs the file.",
    "REG013": "Add the suite to a workflow (`run_suite.py --hw <backend> --suite <name>`), or name the external "
              "workflow that runs it under `consumers:` in `.github/ci-registrar.yml` (`repository` + `workflow`: it "
              "is read from that file); otherwise its tests never run.",
    "REG014": "Update or remove the workflow's `--suite` value: the suite is no longer in the inventory, so "
              "that job selects no test (or fails).",
    "REG015": "Register the tests the job should run in that suite (for the backend the job passes with `--hw`), "
              "or stop running the suite: remove it from the workflow's `--suite`/matrix (for an external consumer, "
              "from that repository's workflow) and from the inventory.",
    "REG016": "Either register the test without `nightly=True` (the job runs regular registrations), or make a "
              "nightly job run the suite with `--nightly` / `--cadence nightly` (the runner admits `nightly=True` "
              "registrations only then).",
    "REG017": "Locally, give `ci-registrar check` a copy of the workflow with `--consumers-from PATH` (e.g. "
              "`curl -sSLO https://raw.githubusercontent.com/sgl-project/sglang/main/.github/workflows/nightly-test-amd-miles-rocm720.yml` "
              "then `--consumers-from nightly-test-amd-miles-rocm720.yml`). For the App, make the repository readable by "
              "its installation (a public repository, or install the App there too), or fix the `consumers:` entry "
              "in `.github/ci-registrar.yml`. `REG017: off` under `rules:` silences it where the copy is never available.",
    "REG020": "Set est_time to the suggested value: at least the p90 of recent passing runs on the calibration "
              "hardware (times the margin, rounded). Check the figures with `ci-registrar durations show --file <path>`.",
    "REG021": "Import durations for the file (`ci-registrar durations import`) or keep the estimate the finding "
              "suggests until enough passing runs are stored (`calibration.min_samples`).",
    "REG030": "Split the suite's files across more shards (`consumers[].shards`), raise the consumer job's "
              "`timeout-minutes`, or move files to another suite, so each shard fits its job timeout.",
    "REG040": "Register the file in the suite whose GPU count matches the test (a `2xGPU` file in a `-2-gpu-` "
              "suite), or correct the test's own GPU count.",
    "REG050": "Nothing to fix if intended: the notice records that coverage on that backend drops. Restore the "
              "registration if the removal was an accident.",
    "REG900": "Fix `.github/ci-registrar.yml` at the reported line (`ci-registrar config validate` checks it "
              "locally; docs/configuration.md lists every key). The check does not fall back to defaults.",
    "REG901": "Keep the suite inventory, the register functions' signatures and the labels as literals the "
              "check can read without running code, or point `paths:` in `.github/ci-registrar.yml` at them.",
    "REG902": "Shrink or simplify the file the finding names (a generated inventory, an alias-heavy workflow, "
              "a huge test file), or, if the file is legitimate, raise that limit for the deployment with "
              "`CI_REGISTRAR_LIMIT_<NAME>` (docs/limits.md). The checks the finding lists were skipped there.",
}


def anchor(code: str) -> str:
    return code.lower()


def help_uri(code: str) -> str:
    return f"{DOCS_URL}#{anchor(code)}"


def short_description(rule: Rule) -> str:
    """The summary's first sentence (SARIF shortDescription)."""
    first = rule.summary.split(": ", 1)[0] if len(rule.summary) > 120 and ": " in rule.summary else rule.summary
    first = first.split(". ", 1)[0].rstrip(".")
    return first + "."


def help_markdown(rule: Rule) -> str:
    return (f"**{rule.code} {rule.name}** (default severity: {rule.severity.value})\n\n"
            f"{rule.summary}\n\n**How to fix:** {ADVICE[rule.code]}\n\n"
            f"Change the severity or turn the rule off under `rules:` in `.github/ci-registrar.yml` "
            f"(`{rule.code}: warning`, `{rule.code}: off`).")


def help_text(rule: Rule) -> str:
    return (f"{rule.summary}\n\nHow to fix: {ADVICE[rule.code]}\n\n"
            f"Change the severity or turn the rule off under `rules:` in .github/ci-registrar.yml.").replace("**", "")


def rule_text(rule: Rule) -> str:
    """`ci-registrar rule CODE`: one rule for a terminal."""
    return (f"{rule.code}  {rule.name}  (default severity: {rule.severity.value})\n\n{rule.summary}\n\n"
            f"How to fix: {ADVICE[rule.code]}\n\n{help_uri(rule.code)}")


def rules_markdown() -> str:
    """docs/rules.md."""
    out = [
        "# Rules",
        "",
        "<!-- Generated by `ci-registrar rule --markdown` (make docs) from checks/rules.py and",
        "     checks/rule_docs.py: edit those, not this file. tests/test_docs.py fails when it is stale. -->",
        "",
        "Every finding of `ci-registrar check` and of the App's check run carries one of these codes.",
        "The severity is the default; `.github/ci-registrar.yml` can change it per rule under `rules:`",
        "(`failure`, `warning`, `notice` or `off`, see [configuration.md](configuration.md#rules)).",
        "A failure fails the check run and makes `ci-registrar check` exit 1.",
        "",
        "| code | name | severity |",
        "| --- | --- | --- |",
    ]
    out += [f"| [{r.code}](#{anchor(r.code)}) | {r.name} | {r.severity.value} |" for r in RULES.values()]
    for r in RULES.values():
        out += ["", f"## {r.code}", "", f"**{r.name}**, default severity **{r.severity.value}**.", "",
                r.summary, "", f"How to fix: {ADVICE[r.code]}"]
    return "\n".join(out) + "\n"

"""README.md is the first five minutes, and every snippet in it and in docs/ works as written.

- The README is short, and its two quick starts come first (a newcomer sees them on the first screens).
- The command-line quick start is run, command by command, on a checkout of miles' vendored tree with
  a branch to diff against: each command answers a check (exit 0 or 1), never a usage error.
- Every ref a snippet installs (`pip install ...@REF`, pre-commit's `rev:`, the Action's `uses:`)
  exists in this repository: no snippet pins a tag that was never cut.
- No table of rules is written by hand: docs/rules.md's, generated from the rule registry, is the one.
- docs/index.md lists every page of docs/, and every relative link of README.md and docs/ resolves.
- A figure that appears in docs/benchmarks.md and in its source page is the same figure.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CLI
from tests.bot.commands.test_seed_pr import git

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MILES = ROOT / "tests/fixtures/targets/miles/ci-31f1ca9"
SCREEN = 50  # lines of a terminal or a browser's first screen of a rendered README, generously
PAGES = sorted(DOCS.glob("*.md"))


def _sections() -> dict[str, int]:
    return {m.group(1): README.read_text()[:m.start()].count("\n") + 1
            for m in re.finditer(r"^## (.+)$", README.read_text(), re.M)}


def _block_after(heading: str, lang: str) -> str:
    text = README.read_text()
    section = text[text.index(f"## {heading}\n"):]
    return section.split(f"```{lang}\n", 1)[1].split("```", 1)[0]


def test_the_readme_is_short_and_its_quick_starts_come_first():
    lines = README.read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move the detail to docs/ (docs/index.md)"
    sections = _sections()
    assert list(sections)[:2] == ["Command-line quick start", "App quick start"]
    assert sections["Command-line quick start"] <= SCREEN // 2
    assert sections["App quick start"] <= 2 * SCREEN
    # The two set-up commands, as CI and the Makefile run them.
    dev = _block_after("Developing", "sh")
    assert [line.split("#")[0].strip() for line in dev.splitlines()] == ["make run", "make test"]
    assert "make test" in (ROOT / ".ci/run").read_text()
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^run: ", make, re.M) and re.search(r"^test: ", make, re.M)


def _quick_start() -> list[list[str]]:
    commands = []
    for line in _block_after("Command-line quick start", "sh").splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "ci-registrar":
            commands.append(words[1:])
    return commands


def test_the_command_line_quick_start_runs_on_a_miles_checkout(tmp_path):
    commands = _quick_start()
    assert [c[0] for c in commands] == ["check", "check", "check", "rule"]
    assert ["--fix"] in [c[1:] for c in commands] and ["--base", "origin/main"] in [c[1:] for c in commands]
    miles = tmp_path / "miles"
    shutil.copytree(MILES, miles)
    git(miles, "init", "-q", "-b", "main")
    git(miles, "add", "-A")
    git(miles, "commit", "-qm", "miles")
    git(miles, "update-ref", "refs/remotes/origin/main", "HEAD")
    # The README's failure: a mistyped suite on the branch, which `--fix` corrects.
    victim = next(p for p in sorted(miles.rglob("test_*.py")) if 'suite="nightly-stage-c-4-gpu-mi350"' in p.read_text())
    victim.write_text(victim.read_text().replace('suite="nightly-stage-c-4-gpu-mi350"', 'suite="nightly-stage-c-4-gpu-mi35"', 1))
    git(miles, "switch", "-qc", "my-branch")
    git(miles, "commit", "-qam", "a typo")
    outcomes = []
    for args in commands:
        done = subprocess.run([CLI, *args], cwd=miles, capture_output=True, text=True, timeout=120)
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, (args, done.stdout, done.stderr)
        outcomes.append((args, done.returncode, done.stdout))
    (_, first, out), (_, diff, _), (_, fixed, _), (_, rule, text) = outcomes
    assert first == 1 and "did you mean `nightly-stage-c-4-gpu-mi350`" in out and re.search(r"test files, .* failures?, ", out)
    assert diff == 1 and fixed == 0 and rule == 0 and "How to fix" in text
    assert 'suite="nightly-stage-c-4-gpu-mi350"' in victim.read_text()
    again = subprocess.run([CLI, "check"], cwd=miles, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout


def _snippet_refs() -> list[tuple[str, str]]:
    refs = []
    for path in [README, *PAGES, ROOT / "action.yml", ROOT / ".pre-commit-hooks.yaml"]:
        text = path.read_text()
        for pattern in (r"ci-registrar@([^\s'\"`#]+)", r"^\s*#?\s*rev:\s*([^\s#]+)"):
            refs += [(path.name, ref) for ref in re.findall(pattern, text, re.M)]
    return refs


def test_every_ref_a_snippet_pins_exists():
    refs = _snippet_refs()
    assert ("README.md", "main") in refs
    inside = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--git-dir"], capture_output=True)
    if inside.returncode != 0:
        pytest.skip("not a git checkout")
    for page, ref in refs:
        if ref.startswith(("<", "$")):  # a placeholder such as <sha>, or the Action's own ${VERSION}
            continue
        found = any(subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"],
                                   capture_output=True).returncode == 0 for name in (ref, f"origin/{ref}", f"refs/tags/{ref}"))
        assert found, f"{page} pins `{ref}`, which this repository has no branch, tag or commit named"


def test_no_rule_table_is_written_by_hand():
    for path in [README, *PAGES]:
        if path.name == "rules.md":
            continue
        # A row keyed by a rule: `| REG010 | ...` or `| [REG010](#reg010) | ...` (a finding's row links elsewhere).
        rows = re.findall(r"^\|\s*(?:`?REG\d{3}`?|\[REG\d{3}\]\(#reg\d{3}\))\s*\|", path.read_text(), re.M)
        assert not rows, f"{path.name} has a hand-written table of rules: link docs/rules.md (generated) instead"


def test_the_docs_index_lists_every_page_and_every_link_resolves():
    index = (DOCS / "index.md").read_text()
    listed = set(re.findall(r"\]\(([^)#]+)\)", index))
    missing = [p.name for p in PAGES if p.name != "index.md" and p.name not in listed]
    assert missing == [], f"docs/index.md does not list {missing}"
    broken = []
    for path in [README, *PAGES]:
        for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (path.parent / target.split("#")[0]).exists():
                broken.append(f"{path.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_the_calibration_figures_are_the_replays():
    """docs/benchmarks.md quotes docs/calibration.md's replay; the two say the same numbers."""
    table = (DOCS / "calibration.md").read_text()
    rows = {cells[0]: cells for cells in (
        [c.strip() for c in line.strip("|").split("|")] for line in table.splitlines() if line.startswith("| "))}
    ours, p90 = rows["this policy"], rows["p90-only (sglang's weekly script)"]
    more = round(100 * (float(ours[5].replace(",", "")) / float(p90[5].replace(",", "")) - 1))
    bench = " ".join((DOCS / "benchmarks.md").read_text().split())
    quoted = (f"{ours[1]} runs timed out by the est_time in force against {p90[1]}, {ours[4]} est_time changes "
              f"a week against {p90[4]}, for {more} % more GPU-hours reserved")
    assert quoted in bench
    assert f"about\n{more} % more GPU-hours" in table or f"{more} % more GPU-hours" in " ".join(table.split())


def test_make_run_installs_the_app_only_and_make_test_the_test_tools(tmp_path):
    """`make run` on a fresh clone: the App's extra, not the test toolchain; `make test` adds it."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)

    def planned(target):
        done = subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    run, test = planned("run"), planned("test")
    assert "pip install --quiet -e '.[app]'" in run and "test]" not in run and "ci-registrar serve" in run
    assert "'.[app,test]'" in test and "tests/services.sh" in test and "tests/run.sh" in test
    services = (ROOT / "tests/services.sh").read_text()
    # The browser only when missing, said before it is installed, with why it needs root.
    assert "[ ! -x /usr/bin/chromium ]" in services and "installing Debian's chromium" in services
    assert "so this runs as root" in services and "CI_REGISTRAR_NO_BROWSER=1" in services

"""`ci-registrar check`: the registration rules on a local checkout, whole tree or a diff.

`--fix` writes the engine's fixes (whole-line replacements) into the working tree, `--diff`
previews them as a unified diff; `--new-only` keeps what a diff added or changed, so a repository
with old findings can adopt the check without first fixing its history.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from bot.commands.errors import fail as _fail_command, git_failure
from bot.commands.root import is_target
from checks.wording import plural

FAIL_ON = {"failure": ("failure",), "warning": ("failure", "warning")}


def _fail(message: str) -> None:
    _fail_command("check", message)


def _durations_from_file(path: str, repository: str | None):
    """`check_tree`'s durations from a `--durations-file` (bot/durations/file_reader.py reads every shape)."""
    from bot.durations.file_reader import DurationsFileError, read_durations_file

    try:
        found = read_durations_file(path)
    except DurationsFileError as exc:
        _fail(str(exc))
    problem = found.unknown_repository(repository)
    if problem:
        _fail(problem)

    def rows(config) -> list[dict]:
        out = found.check_rows(config.calibration, repository=repository)
        used = sum(1 for r in out if (r.get("hardware") or None) == config.calibration.hardware)
        notice = found.nothing_read(used, config.calibration.hardware, repository)
        if notice:
            click.echo(f"ci-registrar check: {notice}", err=True)
        return out

    return rows


def _durations_from_store(repository: str | None):
    def rows(config) -> list[dict]:
        from bot.durations.query import check_rows
        from bot.infra.settings import load_settings
        from bot.store.measurements import NO_STORE, open_for_reading, sqlite_path

        url = load_settings().database_url
        if open_for_reading(url) is None:  # reading never creates a store
            click.echo(f"ci-registrar check: {NO_STORE.format(path=sqlite_path(url))}", err=True)
            return []
        require_stored_repository("check", url, repository)
        return check_rows(url, repository=repository, params=config.calibration, default_branch="main")

    return rows


def _no_evidence_from_the_diff(durations, durations_file: str | None, root: Path, changed: dict):
    """A `--durations-file` inside the checkout that the diff changes is the pull request's own
    writing: its est_time statistics are read as before, but no run in it is evidence
    (checks/calibration/evidence.py)."""
    if durations is None or durations_file is None:
        return durations
    try:
        rel = Path(durations_file).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return durations  # outside the checkout: the caller's own file
    if rel not in changed:
        return durations

    def rows(config) -> list[dict]:
        from checks.calibration.evidence import without_evidence

        click.echo(f"ci-registrar check: {durations_file} is changed by the diff: its runs are no evidence", err=True)
        return without_evidence(durations(config))

    return rows


def _head_runs(from_store: bool, repository: str | None, head_sha: str) -> dict | None:
    """With --durations: the on-demand runs the App dispatched for this exact head, from the store."""
    if not from_store:
        return None
    from bot.infra.settings import load_settings
    from bot.store.evidence import head_runs
    from bot.store.measurements import open_for_reading

    url = load_settings().database_url
    if open_for_reading(url) is None:
        return None
    return head_runs(url, repository=repository, head_sha=head_sha)


def require_stored_repository(command: str, url: str, repository: str | None) -> None:
    """Exit 2 when `--repository` names none of the store's repositories (a typo reads nothing)."""
    if repository is None:
        return
    from bot.store.measurements import repositories

    stored = repositories(url)
    if repository not in stored:
        _fail_command(command, f"--repository {repository}: the store holds no durations of it; it holds: "
                               + (", ".join(stored) if stored else "none yet (`ci-registrar durations import`)"))


def _named_paths(root: Path, paths: tuple[str, ...]) -> list[str]:
    """PATH arguments as paths relative to the checkout's root ('' for the root itself)."""
    out = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            _fail(f"{raw}: no such file or directory")
        try:
            rel = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            _fail(f"{raw} is outside the checkout {root}")
        out.append("" if rel == "." else rel)
    return out


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--repo", "repo", default=None,
              help="Root of the repository checkout (default: found from PATH, else from the current directory, "
                   "walking up to the directory with `.git`, or without one the directory with "
                   ".github/ci-registrar.yml).")
@click.option("--base", "base", default=None, help="Base git revision: check the diff base..head.")
@click.option("--head", "head", default=None, help="Head git revision (with --base; default HEAD).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github", "sarif", "summary"]), default="text", show_default=True,
              help="summary: the check run's summary Markdown, as the App posts it (with --base: registration-only, per-suite costs).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Write the report to this file instead of stdout (e.g. a SARIF file to upload).")
@click.option("--new-only", is_flag=True, help="With --base: report only what the diff brings: findings on registrations it added or changed, in files it added, removals, and every other finding the base revision did not have; the exit status follows what is reported.")
@click.option("--fix", "apply_fixes", is_flag=True, help="Apply the fixes to the files in the working tree, then report what is left.")
@click.option("--diff", "show_diff", is_flag=True, help="Print the fixes as a unified diff on stdout and change no file; exit 1 when there is something to fix.")
@click.option("--fail-on", type=click.Choice(sorted(FAIL_ON)), default="failure", show_default=True, help="Exit 1 when a reported finding is at least this severe.")
@click.option("--durations", "from_store", is_flag=True, help="Judge est_time (REG020/REG021) against the durations store (DATABASE_URL or the data directory).")
@click.option("--durations-file", type=click.Path(dir_okay=False), default=None, help="Judge est_time against a `durations export` file (JSON or CSV; a `durations show --format json` file works too).")
@click.option("--repository", default=None, metavar="OWNER/NAME", help="With --durations or --durations-file: whose durations to use (default: every repository in the store or file).")
@click.option("--consumers-from", "consumers_from", multiple=True, type=click.Path(dir_okay=False), metavar="PATH",
              help="A local copy of a configured external consumer's workflow (matched by file name to `consumers:` in "
                   ".github/ci-registrar.yml; one matching none counts as one more consumer). Repeatable. Without it, "
                   "an external consumer is not read (REG017 warning).")
@click.option("--select", "select", multiple=True, metavar="RULES",
              help="Report only these rules: codes (REG010), code prefixes (REG01) or names (unknown-suite), "
                   "comma-separated or repeated. A rule the configuration turns off stays off.")
@click.option("--ignore", "ignore", multiple=True, metavar="RULES",
              help="Report none of these rules (codes, prefixes or names), on top of the configuration's `off`.")
@click.option("--extend-ignore", "extend_ignore", multiple=True, metavar="RULES",
              help="The same as --ignore (ruff's spelling for adding to the ignored rules).")
@click.option("--brief", is_flag=True,
              help="Text: failures first and in full, warnings and notices summarised in one line (the pre-commit hook's output).")
@click.option("-v", "--verbose", is_flag=True, help="With --brief: list the warnings and notices too, after the failures.")
@click.option("--list-rules", is_flag=True, help="Print the rule registry and exit (see also `ci-registrar rule`).")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None, help="Keep each file's parsed facts here, by content hash (default: one directory per checkout under $CI_REGISTRAR_CACHE_DIR, else $XDG_CACHE_HOME/ci-registrar, else ~/.cache/ci-registrar).")
@click.option("--no-cache", is_flag=True, help="Parse every file again; read and write no scan cache.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Processes that parse files (default: one per idle core this process may use).")
def check(paths: tuple[str, ...], repo: str | None, base: str | None, head: str | None, fmt: str, output: str | None, new_only: bool, apply_fixes: bool,
          show_diff: bool, fail_on: str, from_store: bool, durations_file: str | None, repository: str | None,
          consumers_from: tuple[str, ...], select: tuple[str, ...], ignore: tuple[str, ...],
          extend_ignore: tuple[str, ...], brief: bool, verbose: bool, list_rules: bool, cache_dir: str | None, no_cache: bool, jobs: int | None) -> None:
    """Check the CI registrations of a checkout; with PATHs, report only the findings in those files
    and directories (the whole checkout is still read: suites and consumers live elsewhere).
    Exit 0: no failure; 1: failures; 2: usage or environment error."""
    if list_rules:
        from checks.rules import RULES

        for r in RULES.values():
            click.echo(f"{r.code}  {r.severity.value:<7}  {r.name}: {r.summary}")
        return
    from checks.engine import check_tree
    from checks.scanning.parallel import available_workers
    from checks.scanning.tree import DirectoryTree, GitError, GitRevisionTree, changed_paths

    from bot.commands.root import checkout

    root = checkout("check", repo, Path(paths[0]) if paths else None)
    repo = str(root)
    named = _named_paths(root, paths) if paths else None
    if named is not None and "" in named:
        named = None  # the root itself: everything
    if head is not None and base is None:
        _fail("--head needs --base (the diff base..head)")
    if new_only and base is None:
        _fail("--new-only needs --base (what is new is relative to a base revision)")
    if apply_fixes and show_diff:
        _fail("--fix and --diff exclude each other (--diff previews what --fix writes)")
    if (apply_fixes or show_diff) and head is not None:
        _fail("--fix/--diff change the working tree: leave out --head")

    reported = _rule_filter(select, ignore + extend_ignore)

    durations = None
    if durations_file is not None:
        durations = _durations_from_file(durations_file, repository)
    elif from_store:
        durations = _durations_from_store(repository)

    scan_cache = None
    if not no_cache:
        from bot.commands.root import scan_cache_for

        scan_cache = scan_cache_for(root, cache_dir)
    external: dict[str, bytes] = {}
    for path in consumers_from:
        try:
            external[path] = Path(path).read_bytes()
        except OSError as exc:
            _fail(f"cannot read --consumers-from {path}: {exc.strerror or exc}")

    workers = jobs or available_workers()  # the first check of a checkout parses every file: on every idle core
    added: set[str] = set()
    diff: dict = {}  # the base tree and the changed paths of a diff check (--new-only compares with the base)
    # Fixes are formatted with libcst (a third of a small run's time): only for outputs that show them.
    fixes = fmt in ("text", "sarif") or apply_fixes or show_diff

    def run():
        tree, report = _run()
        if reported is not None:
            report.findings = [f for f in report.findings if reported(f.rule)]
        if named is not None:
            from checks.ruleset import UNSELECTABLE

            report.findings = [f for f in report.findings if f.rule in UNSELECTABLE or any(
                f.file == p or f.file.startswith(p.rstrip("/") + "/") for p in named)]
        return tree, report

    def _run():
        if base is not None:
            try:
                head_tree = GitRevisionTree(root, head or "HEAD")
                base_tree = GitRevisionTree(root, base)
                changed = changed_paths(root, base_tree.commit, head_tree.commit)
            except GitError as exc:
                _fail(git_failure(root, str(exc)))
            if not is_target(head_tree):
                _not_target(head_tree)
            added.update(p for p, b in changed.items() if b is None)
            diff.update(base=base_tree, changed=changed)
            given = _no_evidence_from_the_diff(durations, durations_file, root, changed)
            return head_tree, check_tree(head_tree, base=base_tree, changed=changed, durations=given, fixes=fixes,
                                         scan_cache=scan_cache, consumers_from=external, workers=workers,
                                         head_runs=_head_runs(from_store and durations_file is None, repository,
                                                              head_tree.commit))
        tree = DirectoryTree(root)
        if not is_target(tree):
            _not_target()
        return tree, check_tree(tree, durations=durations, fixes=fixes, scan_cache=scan_cache, consumers_from=external, workers=workers)

    def _not_target(revision=None):
        from bot.commands.root import not_target, uncommitted_mark

        # --base reads commits: what makes the working tree a target may not be committed yet.
        mark = uncommitted_mark(root, revision) if revision is not None else None
        if mark is not None:
            _fail(f"{mark} is in the working tree but not committed at {head or 'HEAD'}, and --base checks commits: "
                  f"commit it, or check the working tree without --base")
        _fail(not_target(repo if repo is not None else root))

    def base_report():
        """The base checked whole, with its own configuration: what was there before the diff."""
        from checks.model import Report

        try:
            if not is_target(diff["base"]):
                return Report()
            return check_tree(diff["base"], durations=durations, fixes=False, scan_cache=scan_cache, consumers_from=external, workers=workers)
        except GitError as exc:
            _fail(git_failure(root, str(exc)))

    def keep_new(report):
        from bot.commands.fixing import new_findings

        return new_findings(report, added, base_report, diff["changed"])

    try:
        tree, report = run()
        if new_only:
            report.findings = keep_new(report)
        if show_diff:
            from bot.commands.fixing import plan

            edits, skipped = plan(root, tree, report.findings)
            for message in skipped:
                click.echo(f"ci-registrar check: {message}", err=True)
            click.echo(edits.diff(), nl=False)
            sys.exit(1 if edits else 0)
        if apply_fixes:
            report = _fix(root, tree, report, run, rerun=base is None, keep_new=keep_new if new_only else None)
    except PermissionError as exc:
        _fail(f"cannot read {exc.filename}: permission denied")

    # Given files (the pre-commit hook's), a brief report that finds no failure in them ends without
    # its counts line: with --all-files pre-commit splits the files into batches, one process each,
    # and shows their output one after the other, so a clean last batch's "0 failures" would close
    # a run an earlier batch failed.
    text = _render(report, fmt, root, brief=brief, verbose=verbose, counts=named is None)
    if output:
        try:
            Path(output).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            _fail(f"cannot write {output}: {exc.strerror or exc}")
        from checks.reporting.render import summary_line

        click.echo(summary_line(report), err=True)
    elif text:  # a clean batch of the hook's files says nothing
        click.echo(text)
    levels = FAIL_ON[fail_on]
    sys.exit(1 if any(f.severity.value in levels for f in report.findings) else 0)


def _rule_filter(select: tuple[str, ...], ignore: tuple[str, ...]):
    """Which rule codes a report keeps, from --select and --ignore/--extend-ignore (None: all)."""
    if not select and not ignore:
        return None
    from checks.rules import RULES, resolve_rules
    from checks.ruleset import UNSELECTABLE

    def codes(option: str, values: tuple[str, ...]) -> set[str]:
        found, unknown = resolve_rules(part for value in values for part in value.split(","))
        if unknown:
            from checks.wording import did_you_mean

            hint = did_you_mean(unknown[0], [*RULES, *(r.name for r in RULES.values())])
            _fail(f"{option}: no rule is called {', '.join(unknown)}{hint} (codes, code prefixes such as REG01, or "
                  "names: `ci-registrar check --list-rules`)")
        return found

    selected = codes("--select", select) if select else set(RULES)
    ignored = codes("--ignore", ignore)
    return lambda code: code in UNSELECTABLE or (code in selected and code not in ignored)


def _fix(root: Path, tree, report, run, *, rerun: bool, keep_new=None):
    """Apply fixes in rounds (two fixes of one statement overlap); the report of what is left.

    Whole-tree mode checks the working tree again after each round. Diff mode checks a commit,
    which the fixes do not change: there the fixed findings are taken out of the report.
    """
    from bot.commands.fixing import apply, plan

    fixed_total, written_all = 0, set()
    for _round in range(5):
        edits, skipped = plan(root, tree, report.findings)
        written = apply(root, edits)
        fixed_total += edits.count
        written_all.update(written)
        if not written or not rerun:
            for message in skipped:
                click.echo(f"ci-registrar check: {message}", err=True)
            if not rerun:
                fixed = {id(f) for f in edits.fixed}
                report.findings = [f for f in report.findings if id(f) not in fixed]
            break
        tree, report = run()
        if keep_new is not None:
            report.findings = keep_new(report)
    if fixed_total:
        click.echo(f"ci-registrar check: fixed {plural(fixed_total, 'finding')} in {plural(len(written_all), 'file')}: "
                   + ", ".join(sorted(written_all)), err=True)
    return report


def _render(report, fmt: str, root: Path, *, brief: bool = False, verbose: bool = False, counts: bool = True) -> str:
    from checks.model import Severity
    from checks.reporting.render import RENDERERS, to_brief_text, to_sarif

    if brief and fmt == "text":
        return to_brief_text(report, verbose, counts=counts or report.count(Severity.FAILURE) > 0)

    if fmt == "sarif":
        return to_sarif(report, srcroot=root.resolve().as_uri() + "/")
    return RENDERERS[fmt](report)

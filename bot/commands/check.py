"""`ci-registrar check`: the registration rules on a local checkout, whole tree or a diff."""

from __future__ import annotations

import sys
from pathlib import Path

import click


def _fail(message: str) -> None:
    click.echo(f"ci-registrar check: {message}", err=True)
    sys.exit(2)


def _durations_from_file(path: str) -> list[dict]:
    import json

    try:
        rows = json.loads(Path(path).read_text())
    except OSError as exc:
        _fail(f"cannot read {path}: {exc.strerror}")
    except ValueError as exc:
        _fail(f"{path} is not JSON: {exc}")
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "file" in r for r in rows):
        _fail(f"{path} is not a `durations show --format json` list of {{file, backend, hardware, n, median, p90, max}} objects")
    return rows


def _durations_from_store(repository: str | None):
    def rows(config) -> list[dict]:
        from bot.durations import query_stats
        from bot.settings import load_settings
        from bot.store.measurements import ensure_store

        url = load_settings().database_url
        ensure_store(url)  # creates the embedded SQLite store on first use; locked against racing workers
        out = []
        for row in query_stats(url, repository=repository, hardware=config.calibration.hardware, params=config.calibration):
            item = row.as_json()
            item["since"] = row.since.isoformat() if row.since else None
            out.append(item)
        return out

    return rows


@click.command()
@click.option("--repo", "repo", default=".", show_default=True, help="Root of the repository checkout.")
@click.option("--base", "base", default=None, help="Base git revision: check the diff base..head.")
@click.option("--head", "head", default=None, help="Head git revision (with --base; default HEAD).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github", "sarif"]), default="text", show_default=True)
@click.option("--durations", "from_store", is_flag=True, help="Judge est_time (REG020/REG021) against the durations store (DATABASE_URL or the data directory).")
@click.option("--durations-file", type=click.Path(dir_okay=False), default=None, help="Judge est_time against a `durations show --format json` file.")
@click.option("--repository", default=None, metavar="OWNER/NAME", help="With --durations: whose stored durations to use (default: every repository in the store).")
@click.option("--list-rules", is_flag=True, help="Print the rule registry and exit.")
def check(repo: str, base: str | None, head: str | None, fmt: str, from_store: bool, durations_file: str | None, repository: str | None, list_rules: bool) -> None:
    """Check the CI registrations of a checkout. Exit 0: no failure; 1: failures; 2: usage error."""
    if list_rules:
        from checks.rules import RULES

        for r in RULES.values():
            click.echo(f"{r.code}  {r.severity.value:<7}  {r.name}: {r.summary}")
        return
    from checks.engine import check_tree
    from checks.render import RENDERERS
    from checks.tree import DirectoryTree, GitError, GitRevisionTree, changed_paths

    durations = None
    if durations_file is not None:
        durations = _durations_from_file(durations_file)
    elif from_store:
        durations = _durations_from_store(repository)

    root = Path(repo)
    if not root.is_dir():
        _fail(f"{repo} is not a readable directory")
    if head is not None and base is None:
        _fail("--head needs --base (the diff base..head)")
    try:
        if base is not None:
            head_tree = GitRevisionTree(root, head or "HEAD")
            base_tree = GitRevisionTree(root, base)
            changed = changed_paths(root, base_tree.commit, head_tree.commit)
            report = check_tree(head_tree, base=base_tree, changed=changed, durations=durations)
        else:
            report = check_tree(DirectoryTree(root), durations=durations)
    except GitError as exc:
        _fail(f"git: {exc} (is {repo} a git repository with revisions {base} and {head or 'HEAD'}?)")
    except PermissionError as exc:
        _fail(f"cannot read {exc.filename}: permission denied")
    click.echo(RENDERERS[fmt](report))
    sys.exit(1 if report.failed else 0)

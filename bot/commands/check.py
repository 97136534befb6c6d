"""`ci-registrar check`: the registration rules on a local checkout, whole tree or a diff."""

from __future__ import annotations

import sys
from pathlib import Path

import click


def _fail(message: str) -> None:
    click.echo(f"ci-registrar check: {message}", err=True)
    sys.exit(2)


@click.command()
@click.option("--repo", "repo", default=".", show_default=True, help="Root of the repository checkout.")
@click.option("--base", "base", default=None, help="Base git revision: check the diff base..head.")
@click.option("--head", "head", default=None, help="Head git revision (with --base; default HEAD).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github", "sarif"]), default="text", show_default=True)
@click.option("--list-rules", is_flag=True, help="Print the rule registry and exit.")
def check(repo: str, base: str | None, head: str | None, fmt: str, list_rules: bool) -> None:
    """Check the CI registrations of a checkout. Exit 0: no failure; 1: failures; 2: usage error."""
    if list_rules:
        from checks.rules import RULES

        for r in RULES.values():
            click.echo(f"{r.code}  {r.severity.value:<7}  {r.name}: {r.summary}")
        return
    from checks.engine import check_tree
    from checks.render import RENDERERS
    from checks.tree import DirectoryTree, GitError, GitRevisionTree, changed_paths

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
            report = check_tree(head_tree, base=base_tree, changed=changed)
        else:
            report = check_tree(DirectoryTree(root))
    except GitError as exc:
        _fail(f"git: {exc} (is {repo} a git repository with revisions {base} and {head or 'HEAD'}?)")
    except PermissionError as exc:
        _fail(f"cannot read {exc.filename}: permission denied")
    click.echo(RENDERERS[fmt](report))
    sys.exit(1 if report.failed else 0)

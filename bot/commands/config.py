"""`ci-registrar config validate | defaults | reference | schema`: the `.github/ci-registrar.yml` file."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.group()
def config():
    """The configuration file, .github/ci-registrar.yml (docs/configuration.md)."""


@config.command()
@click.argument("path", required=False)
@click.option("--repo", default=None,
              help="Repository root PATH defaults under (default: the checkout holding the current directory, "
                   "found as `check` finds it).")
def validate(path: str | None, repo: str | None) -> None:
    """Validate PATH (default: the checkout's .github/ci-registrar.yml; a checkout without one uses the
    defaults, which are valid). Exit 0 valid, 1 invalid, 2 unreadable."""
    from bot.commands.root import checkout
    from checks.config.schema import CONFIG_PATH, load_config

    if path:
        target = Path(path)
    else:
        root = checkout("config validate", repo)
        target = root / CONFIG_PATH
        if not target.exists():
            from bot.commands.errors import fail
            from bot.commands.root import is_target, not_target
            from checks.scanning.tree import DirectoryTree

            if not is_target(DirectoryTree(root)):
                fail("config validate", not_target(root))
            click.echo(f"{root}: no {CONFIG_PATH}, the defaults apply (`ci-registrar config defaults`): valid")
            return
    try:
        data = target.read_bytes()
    except OSError as exc:
        click.echo(f"ci-registrar config validate: cannot read {target}: {exc.strerror or exc}", err=True)
        sys.exit(2)
    _config, findings = load_config(data, path=str(target))
    for f in findings:
        click.echo(f"{target}:{f.span.line}:{f.span.column}: {f.message}")
    if findings:
        sys.exit(1)
    click.echo(f"{target}: valid")


@config.command()
def defaults() -> None:
    """Print the default configuration as YAML (every key, every default)."""
    from checks.config.reference import defaults_yaml

    click.echo(defaults_yaml(), nl=False)


@config.command()
def reference() -> None:
    """Print docs/configuration.md: every key, its type, default and meaning."""
    from checks.config.reference import reference_markdown

    click.echo(reference_markdown(), nl=False)


@config.command()
def schema() -> None:
    """Print docs/ci-registrar.schema.json, the JSON Schema of the file for editors."""
    from checks.config.reference import json_schema_text

    click.echo(json_schema_text(), nl=False)

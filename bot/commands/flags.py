"""Flags whose name means one thing across every command.

`--repo DIR` is the checkout (`check`, `calibrate`, `run-plan`, `config`); `--repository OWNER/NAME`
is a repository on GitHub, whose durations or audit entries to read (`check`, `calibrate`,
`durations`, `audit`). `durations` and `audit` used to call the latter `--repo`: that spelling still
works there, with one line on stderr saying what to write instead.
"""

from __future__ import annotations

import functools

import click


def repository_option(help: str):
    """`--repository OWNER/NAME` (the function receives `repository`), with `--repo` kept, deprecated."""

    def decorate(fn):
        @functools.wraps(fn)
        def command(*args, repository=None, old_repo=None, **kwargs):
            if old_repo is not None:
                ctx = click.get_current_context()
                name = " ".join(["ci-registrar", *ctx.command_path.split()[1:]])  # whatever the program was called
                click.echo(f"{name}: --repo OWNER/NAME is deprecated here, write --repository {old_repo} "
                           f"(--repo names a checkout directory in check, calibrate, run-plan and config)", err=True)
                if repository is not None and repository != old_repo:
                    raise click.UsageError(f"--repository {repository} and --repo {old_repo} name two repositories")
            return fn(*args, repository=repository or old_repo, **kwargs)

        command = click.option("--repo", "old_repo", metavar="OWNER/NAME", hidden=True, default=None)(command)
        return click.option("--repository", "repository", metavar="OWNER/NAME", default=None, help=help)(command)

    return decorate

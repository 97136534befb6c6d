"""`ci-registrar rule [CODE]`: what a rule means and how to fix it; `--markdown` is docs/rules.md."""

from __future__ import annotations

import sys

import click


@click.command()
@click.argument("code", required=False)
@click.option("--markdown", is_flag=True, help="Print docs/rules.md (every rule) instead.")
def rule(code: str | None, markdown: bool) -> None:
    """What a rule means and how to fix it (CODE: REG010 or unknown-suite); without CODE, every rule."""
    from checks.rule_docs import rule_text, rules_markdown
    from checks.rules import RULES

    if markdown:
        click.echo(rules_markdown(), nl=False)
        return
    if code is None:
        for r in RULES.values():
            click.echo(f"{r.code}  {r.severity.value:<7}  {r.name}")
        return
    found = RULES.get(code.upper()) or next((r for r in RULES.values() if r.name == code.lower()), None)
    if found is None:
        from checks.wording import did_you_mean

        hint = did_you_mean(code, [*RULES, *(r.name for r in RULES.values())])
        click.echo(f"ci-registrar rule: unknown rule `{code}`{hint} (known: {', '.join(RULES)})", err=True)
        sys.exit(2)
    click.echo(rule_text(found))

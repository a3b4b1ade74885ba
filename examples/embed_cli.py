"""Mount Guard's command line inside another click CLI: ``mytool guard check --repo .``.

python examples/embed_cli.py guard check --repo REPO --json
"""

from __future__ import annotations

import click

from guard_adapters.cli.main import guard


@click.group()
def mytool() -> None:
    """A team's own developer tool."""


@mytool.command()
def hello() -> None:
    """A command of the host tool."""
    click.echo("hello from mytool")


mytool.add_command(guard)  # every guard command, under `mytool guard ...`

if __name__ == "__main__":
    mytool()

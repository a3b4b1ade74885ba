"""The CLI reference (docs/cli.md), rendered from the click commands themselves.

``python -m guard_adapters.cli.reference > docs/cli.md``; a test fails when the file and the
commands disagree.
"""

from __future__ import annotations

import click

from guard_adapters.cli.main import guard

HEADER = """# CLI reference

Generated from the commands (`python -m guard_adapters.cli.reference > docs/cli.md`); a test
keeps it in step. Exit codes everywhere: 0 success, 1 failing tests (or a failed check), 2 usage
or infrastructure error.
"""


def _walk(command: click.Command, path: str) -> list[tuple[str, click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name in sorted(command.commands):
            if not command.commands[name].hidden:  # the worker's own commands
                found += _walk(command.commands[name], f"{path} {name}")
    return found


def _options(command: click.Command, ctx: click.Context) -> list[str]:
    rows = []
    for param in command.get_params(ctx):
        record = None if isinstance(param, click.Argument) else param.get_help_record(ctx)
        if record is None:
            continue
        names, text = (part.replace("|", "\\|") for part in record)
        rows.append(f"| `{names}` | {text} |")
    return rows


def render(root: click.Group = guard, name: str = "guard") -> str:
    parts = [HEADER]
    for path, command in _walk(root, name):
        ctx = click.Context(command, info_name=path)
        usage = command.collect_usage_pieces(ctx)
        parts += [f"## `{path}`", "", f"    {path} {' '.join(usage)}".rstrip(), ""]
        parts += [(command.help or "").strip(), ""]
        rows = _options(command, ctx)
        if rows:
            parts += ["| option | meaning |", "| --- | --- |", *rows, ""]
    return "\n".join(parts).rstrip() + "\n"


if __name__ == "__main__":
    click.echo(render(), nl=False)

"""The ``guard`` click group and what every command shares: the ``--repo`` option, errors
printed as a message and a hint, JSON output. The commands live in :mod:`.main`,
:mod:`.commands` and :mod:`.agents`, which import this module (never each other)."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from guard_adapters.interrupts import interrupted
from guard_core.errors import GuardError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USAGE = 2


def handle_errors(func: F) -> F:
    """Print a GuardError as a message and a hint, never a traceback; exit 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except GuardError as exc:
            click.secho(f"guard: {exc.message}", fg="red", err=True)
            if exc.hint:
                click.echo(f"  hint: {exc.hint}", err=True)
            sys.exit(EXIT_USAGE)
        except KeyboardInterrupt:
            click.echo("guard: interrupted", err=True)
            sys.exit(130)
        except Exception as exc:
            if not interrupted(exc):
                raise
            click.echo("guard: interrupted", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


repo_option = click.option(
    "--repo",
    "repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="The target repository.",
)


def _interpreter(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    # a path is relative to where the command was typed; pytest runs in the repository
    if value and os.sep in value:
        return os.path.abspath(os.path.expanduser(value))
    return value


python_option = click.option(
    "--python",
    "python",
    default=None,
    callback=_interpreter,
    help="Interpreter that runs the tests.",
)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--log-format",
    type=click.Choice(["console", "json"]),
    default="console",
    help="How log lines on stderr look.",
)
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.version_option(package_name="guard-graph", prog_name="guard")
def guard(log_format: str, verbose: int) -> None:
    """Guard: which pytest tests must run after an edit, and why."""
    from guard_adapters.cli.logging import configure

    configure(log_format, verbose)

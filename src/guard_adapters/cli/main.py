"""The ``guard`` command line: a thin click layer over the library.

Heavy imports stay inside the commands so ``guard check`` loads only what it uses. The group is
a plain click group, so another click CLI can mount it with ``cli.add_command(guard)``.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

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

    return wrapper  # type: ignore[return-value]


repo_option = click.option(
    "--repo",
    "repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="The target repository.",
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


@guard.command()
@repo_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@handle_errors
def stats(repo: Path, as_json: bool) -> None:
    """Node and edge counts of the repository's graph."""
    from guard_adapters.falkordb.plugin import graph_name
    from guard_adapters.workspace import open_guard

    with open_guard(repo, read_only=True) as ws:
        counts = ws.store.stats().as_dict()
        info = ws.store.ingest_info()
    if as_json:
        emit_json(
            {
                "schema": "guard.stats/1",
                "graph": graph_name(ws.settings),
                **counts,
                "static_sha": info.static_sha,
                "coverage_sha": info.coverage_sha,
            }
        )
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"graph {graph_name(ws.settings)}", show_header=True)
    table.add_column("kind")
    table.add_column("count", justify="right")
    for key, value in counts.items():
        table.add_row(key, str(value))
    Console().print(table)


@guard.group()
def server() -> None:
    """The embedded FalkorDB server of a repository."""


@server.command("status")
@repo_option
@handle_errors
def server_status(repo: Path) -> None:
    """Whether the embedded server runs, and where."""
    from guard_adapters.workspace import embedded_server, load

    settings = load(repo, read_only=True)
    if settings.falkordb_url:
        click.echo("server mode: GUARD_FALKORDB_URL is set; no embedded server is used")
        return
    status = embedded_server(settings).status()
    state = "running" if status.running else "stopped"
    click.echo(f"embedded FalkorDB: {state}" + (f" (pid {status.pid})" if status.pid else ""))
    click.echo(f"  socket: {status.socket}")
    click.echo(f"  data:   {status.data_dir}")
    from guard_adapters.cli.worker import worker_pid

    worker = worker_pid(settings.guard_dir)
    click.echo(f"warm worker: running (pid {worker})" if worker else "warm worker: stopped")


@server.command("stop")
@repo_option
@handle_errors
def server_stop(repo: Path) -> None:
    """Stop the embedded server, saving the graph."""
    from guard_adapters.cli.worker import stop_worker
    from guard_adapters.workspace import embedded_server, load

    settings = load(repo, read_only=True)
    stop_worker(settings.guard_dir)
    stopped = embedded_server(settings).stop()
    click.echo("embedded FalkorDB stopped" if stopped else "embedded FalkorDB was not running")


@guard.command()
@repo_option
@handle_errors
def doctor(repo: Path) -> None:
    """Check everything Guard needs, one pass/fail line each with a fix."""
    from guard_adapters.doctor import run_checks

    ok = True
    for check in run_checks(repo):
        mark = click.style("ok  ", fg="green") if check.ok else click.style("FAIL", fg="red")
        click.echo(f"{mark} {check.name}: {check.detail}")
        if not check.ok:
            ok = False
            if check.fix:
                click.echo(f"     fix: {check.fix}")
    sys.exit(0 if ok else 1)


def main() -> None:
    guard(prog_name="guard")


# The other commands register themselves on import; importing them here means a host CLI that
# mounts ``guard`` (``cli.add_command(guard)``) gets every command. They import little.
from guard_adapters.cli import agents, commands  # noqa: E402, F401

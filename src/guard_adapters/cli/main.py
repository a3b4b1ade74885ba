"""The ``guard`` command line: a thin click layer over the library.

Heavy imports stay inside the commands so ``guard check`` loads only what it uses. The group is
a plain click group, so another click CLI can mount it with ``cli.add_command(guard)``;
importing this module registers every command on it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

# the other commands register themselves on the group when imported
from guard_adapters.cli import agents, commands, ingest  # noqa: F401
from guard_adapters.cli.group import EXIT_USAGE, emit_json, guard, handle_errors, repo_option

__all__ = ["EXIT_USAGE", "emit_json", "guard", "handle_errors", "main", "repo_option"]


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
    from guard_adapters.worker.client import worker_pid

    worker = worker_pid(settings.guard_dir)
    click.echo(f"warm worker: running (pid {worker})" if worker else "warm worker: stopped")


@server.command("stop")
@repo_option
@handle_errors
def server_stop(repo: Path) -> None:
    """Stop the embedded server, saving the graph."""
    from guard_adapters.worker.client import stop_worker
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

"""``guard init``, ``guard hook claude-stop`` and ``guard mcp``: Guard inside an agent's loop."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from guard_adapters.cli.group import guard, handle_errors, python_option, repo_option
from guard_core.errors import GuardError


def detect_python(repo: Path) -> str:
    """The interpreter that runs the repo's tests: its own virtualenv when it has one, then the
    active one, then this one."""
    for folder in (".venv", "venv", "env"):
        candidate = repo / folder / "bin" / "python"
        if candidate.exists():
            return str(candidate)
    active = os.environ.get("VIRTUAL_ENV")
    if active and (Path(active) / "bin" / "python").exists():
        return str(Path(active) / "bin" / "python")
    return sys.executable


@guard.command()
@repo_option
@click.option(
    "--agent",
    "agents",
    multiple=True,
    type=click.Choice(["claude", "codex", "cursor", "opencode", "all"]),
    help="Install this agent's integration (repeatable).",
)
@python_option
@handle_errors
def init(repo: Path, agents: tuple[str, ...], python: str | None) -> None:
    """Set a repository up for Guard; running it again changes nothing."""
    from guard_adapters.agents.setup import initialise
    from guard_adapters.cli.ingest import progress_bar
    from guard_adapters.coverage.ingest import ingest_coverage
    from guard_adapters.git.repo import head_sha
    from guard_adapters.pytest.environment import fingerprint
    from guard_adapters.workspace import open_guard

    with open_guard(repo) as ws:
        root = ws.settings.repo
        interpreter = python or ws.settings.python or detect_python(root)

        def ingest() -> str | None:
            info = ws.store.ingest_info()
            env = fingerprint(interpreter)
            if (
                info.coverage_complete
                and info.coverage_sha == head_sha(root)
                and info.environment == env
                and info.python == interpreter
            ):
                return None
            click.echo(f"guard: ingesting {root} with {interpreter}")
            with progress_bar("tests") as update:
                done = ingest_coverage(
                    root,
                    ws.store,
                    python=interpreter,
                    pytest_args=ws.settings.pytest_args,
                    progress=update,
                    environment=env,
                )
            return f"ingested {done.tests} tests and {done.edges} COVERED_BY edges"

        report = initialise(root, agents, ingest)
    for line in report.done:
        click.echo(f"  done: {line}")
    for line in report.kept:
        click.echo(f"  kept: {line}")
    for line in report.failed:
        click.secho(f"  failed: {line}", fg="red", err=True)
    if report.failed:
        click.echo(
            "next: fix the above and run `guard init` again; until then every check "
            "runs the whole suite",
            err=True,
        )
        sys.exit(2)
    click.echo("next: edit code, then `guard check` (what would run) or `guard run`")


@guard.group()
def hook() -> None:
    """Hooks that agent hosts call."""


@hook.command("claude-stop")
@click.option(
    "--budget",
    default=540.0,
    show_default=True,
    help="Seconds the test run may take before the hook says so.",
)
def claude_stop(budget: float) -> None:
    """Claude Code's Stop hook: reads the hook JSON on stdin, blocks while tests fail."""
    reply: dict[str, Any]
    try:
        raw = sys.stdin.read()
        payload = json.loads(raw) if raw.strip() else {}
        if not isinstance(payload, dict):
            raise ValueError("the hook input is not a JSON object")
        reply = _stop_reply(payload, budget)
    except ValueError as exc:
        reply = {"systemMessage": f"guard: unreadable hook input ({exc}); the stop was not checked"}
    except Exception as exc:  # a hook must answer, never print a traceback into the agent's loop
        reply = {"systemMessage": f"guard: internal error ({exc!r}); the stop was not checked"}
    if reply:
        click.echo(json.dumps(reply))


def _stop_reply(payload: dict[str, Any], budget: float) -> dict[str, Any]:
    from guard_adapters.agents.claude import stop_hook
    from guard_adapters.workspace import load, open_guard

    folder = payload.get("cwd") or os.environ.get("CLAUDE_PROJECT_DIR") or "."
    try:
        settings = load(folder)
    except GuardError as exc:
        return {"systemMessage": f"guard: {exc.message}; the stop was not checked"}
    return stop_hook(payload, settings.repo, open_guard, budget, settings.guard_dir)


@guard.command()
@repo_option
@handle_errors
def mcp(repo: Path) -> None:
    """Serve Guard's tools over MCP on stdio (needs the `mcp` extra)."""
    try:
        import mcp as _sdk  # noqa: F401
    except ImportError as exc:
        raise GuardError(
            "the MCP SDK is not installed", hint="pip install 'guard-graph[mcp]'"
        ) from exc
    from guard_adapters.agents.mcp_server import serve
    from guard_adapters.workspace import load, open_guard

    serve(load(repo).repo, open_guard)

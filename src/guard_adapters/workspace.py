"""What the CLI, the worker, the hooks, the MCP server and the pytest plug-in open: a
:class:`~guard_core.api.Guard` (or only its settings) through the one bootstrap,
:func:`guard_core.bootstrap.assemble`, with configuration problems reported on stderr."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from guard_adapters.falkordb.embedded import EmbeddedServer
from guard_adapters.worker.state_cache import remember
from guard_core.api import Guard
from guard_core.bootstrap import assemble
from guard_core.config import Settings


def _opened(repo: str | Path, settings: Settings, warn: bool, overrides: dict[str, Any]) -> None:
    """What every opening does: warn of configuration problems, and tell the fast path where
    the bootstrap put this folder's state (unless this caller moved it)."""
    if warn:
        _warn(settings)
    if overrides.get("state_dir") is None:
        remember(Path(repo).expanduser(), settings.repo, str(settings.guard_dir))


def _warn(settings: Settings) -> None:
    if settings.config_problems:
        problems = "; ".join(" ".join(p.split()) for p in settings.config_problems)
        message = f"guard: warning: {problems}; going on with the defaults"
        click.secho(message, fg="yellow", err=True)


def load(
    repo: str | Path, *, read_only: bool = False, warn: bool = True, **overrides: Any
) -> Settings:
    """Settings for the repository containing ``repo``; ``None`` overrides are ignored.
    ``read_only`` commands go on past a broken pyproject.toml or ``GUARD_*`` value with the
    defaults, after one warning line on stderr (unless not ``warn``); the others refuse it
    (ConfigError)."""
    settings, _ = assemble(repo, env=os.environ, tolerant=read_only, **overrides)
    _opened(repo, settings, warn, overrides)
    return settings


def open_guard(
    repo: str | Path, *, read_only: bool = False, warn: bool = True, **overrides: Any
) -> Guard:
    guard = Guard.open(repo, env=os.environ, tolerant=read_only, **overrides)
    _opened(repo, guard.settings, warn, overrides)
    return guard


def embedded_server(settings: Settings) -> EmbeddedServer:
    return EmbeddedServer(settings.guard_dir, idle_s=settings.server_idle)

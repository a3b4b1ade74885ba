"""The composition root for the CLI: settings for a repository (found from any folder inside
it) and a :class:`~guard_core.api.Guard` wired with the registered adapters."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from guard_adapters.falkordb.embedded import EmbeddedServer
from guard_adapters.git.repo import repo_root
from guard_core.api import Guard
from guard_core.config import Settings, load_settings
from guard_core.errors import RepositoryError
from guard_core.plugins import Plugins


def load(
    repo: str | Path, *, read_only: bool = False, warn: bool = True, **overrides: Any
) -> Settings:
    """Settings for the repository containing ``repo`` (its git top level when there is one);
    ``None`` overrides are ignored. ``read_only`` commands go on past a broken pyproject.toml
    or ``GUARD_*`` value with the defaults, after one warning line on stderr (unless not
    ``warn``); the others refuse it (ConfigError)."""
    path = Path(repo).expanduser().resolve()
    try:
        path = repo_root(path)
    except RepositoryError:
        if not path.is_dir():
            raise
    given = {k: v for k, v in overrides.items() if v is not None}
    settings = load_settings(path, os.environ, tolerant=read_only, **given)
    if warn and settings.config_problems:
        problems = "; ".join(" ".join(p.split()) for p in settings.config_problems)
        message = f"guard: warning: {problems}; going on with the defaults"
        click.secho(message, fg="yellow", err=True)
    return settings


def open_guard(
    repo: str | Path, *, read_only: bool = False, warn: bool = True, **overrides: Any
) -> Guard:
    settings = load(repo, read_only=read_only, warn=warn, **overrides)
    return Guard(settings, Plugins.for_settings(settings))


def embedded_server(settings: Settings) -> EmbeddedServer:
    return EmbeddedServer(settings.guard_dir, idle_s=settings.server_idle)

"""The composition root for the CLI: settings for a repository (found from any folder inside
it) and a :class:`~guard_core.api.Guard` wired with the registered adapters."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from guard_adapters.falkordb.embedded import EmbeddedServer
from guard_adapters.git.repo import repo_root
from guard_core.api import Guard
from guard_core.config import Settings, load_settings
from guard_core.errors import RepositoryError
from guard_core.plugins import Plugins


def load(repo: str | Path, **overrides: Any) -> Settings:
    """Settings for the repository containing ``repo`` (its git top level when there is one);
    ``None`` overrides are ignored."""
    path = Path(repo).expanduser().resolve()
    try:
        path = repo_root(path)
    except RepositoryError:
        if not path.is_dir():
            raise
    given = {k: v for k, v in overrides.items() if v is not None}
    return load_settings(path, os.environ, **given)


def open_guard(repo: str | Path, **overrides: Any) -> Guard:
    settings = load(repo, **overrides)
    return Guard(settings, Plugins.for_settings(settings))


def embedded_server(settings: Settings) -> EmbeddedServer:
    return EmbeddedServer(settings.guard_dir)

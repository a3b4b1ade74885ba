"""The composition root: settings, plugins and adapters for one repository, wired once."""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import Any

from guard_adapters.falkordb.embedded import EmbeddedServer
from guard_adapters.falkordb.plugin import graph_name
from guard_adapters.git.repo import repo_root
from guard_core.config import Settings, load_settings
from guard_core.errors import RepositoryError
from guard_core.plugins import Plugins


def load(repo: str | Path, **overrides: Any) -> Settings:
    """Settings for the repository containing ``repo`` (its git top level when there is one)."""
    path = Path(repo).expanduser().resolve()
    try:
        path = repo_root(path)
    except RepositoryError:
        if not path.is_dir():
            raise
    return load_settings(path, os.environ, **overrides)


def embedded_server(settings: Settings) -> EmbeddedServer:
    return EmbeddedServer(settings.guard_dir)


class Workspace:
    """Everything the commands of one repository need; the store connection is opened lazily
    and kept until :meth:`close`."""

    def __init__(self, settings: Settings, plugins: Plugins) -> None:
        self.settings = settings
        self.plugins = plugins
        self._store: Any = None

    @classmethod
    def open(
        cls, repo: str | Path, extra_plugins: tuple[object, ...] = (), **overrides: Any
    ) -> Workspace:
        settings = load(repo, **overrides)
        return cls(settings, Plugins.for_settings(settings, extra=extra_plugins))

    @property
    def repo(self) -> Path:
        return self.settings.repo

    @property
    def graph_name(self) -> str:
        return graph_name(self.settings)

    @property
    def store(self) -> Any:
        if self._store is None:
            self._store = self.plugins.store(self.settings)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

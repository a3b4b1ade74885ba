"""The one composition root: (a folder of the repository, env, overrides, extra plug-ins) →
the repository's settings and the plug-ins wired for them.

Every entry point goes through it — ``Guard.open``, the CLI, the worker, the MCP server, the
agent hooks, the pytest plug-in — so all of them agree on the repository root (hence on one
state folder and one embedded server) and on which adapters run. The root is resolved once,
by the ``guard_repository_root`` hook (git's top level, from the built-in git plug-in).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import pluggy

from guard_core.config import Settings, load_settings
from guard_core.errors import RepositoryError
from guard_core.plugins import Plugins, make_plugin_manager


def repository_root(pm: pluggy.PluginManager, repo: str | Path) -> Path:
    """The root of the repository holding ``repo`` (``repo`` itself outside any repository);
    RepositoryError when ``repo`` is no folder."""
    start = Path(repo).expanduser().resolve()
    root = pm.hook.guard_repository_root(start=start)
    if root is not None:
        return Path(root)
    if not start.is_dir():
        what = "is not a folder" if start.exists() else "does not exist"
        raise RepositoryError(f"{start} {what}", hint="give a folder of the repository")
    return start


WORKTREE_BASES = 8  # evidence bases kept when worktrees share one graph


def shared_by_worktrees(pm: pluggy.PluginManager, settings: Settings) -> Settings:
    """In a repository with linked worktrees: the main worktree's state folder (unless one is
    configured) and several evidence bases (unless configured), so every worktree reads the
    one evidence and a refresh in one does not replace another's base."""
    try:
        main = pm.hook.guard_main_worktree(root=settings.repo)
    except Exception:  # a plug-in's failure: each worktree keeps its own state, as before
        return settings
    if main is None:
        return settings
    changes: dict[str, Any] = {}
    if settings.state_dir is None and Path(main) != settings.repo:
        changes["state_dir"] = Path(main) / ".guard"
    if settings.evidence_bases is None:
        changes["evidence_bases"] = WORKTREE_BASES
    return attrs.evolve(settings, **changes)


def assemble(
    repo: str | Path = ".",
    *,
    env: Mapping[str, str] | None = None,
    plugins: Iterable[object] = (),
    tolerant: bool = False,
    **overrides: Any,
) -> tuple[Settings, Plugins]:
    """Settings and plug-ins for the repository holding ``repo``; ``None`` overrides are
    ignored, ``env`` defaults to ``os.environ``. ``tolerant`` loads past a broken
    configuration (see :func:`~guard_core.config.load_settings`). Entry-point plug-ins are
    loaded once the settings say whether to (they cannot move the root)."""
    pm = make_plugin_manager(extra=tuple(plugins), autoload=False)
    given = {k: v for k, v in overrides.items() if v is not None}
    environ = os.environ if env is None else env
    root = repository_root(pm, repo)
    settings = shared_by_worktrees(pm, load_settings(root, environ, tolerant=tolerant, **given))
    if settings.plugin_autoload:
        pm.load_setuptools_entrypoints("guard")
        pm.check_pending()
    return settings, Plugins(pm)

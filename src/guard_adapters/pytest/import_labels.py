"""Labelling what a repository module's body runs while it is first imported: a finder on
``sys.meta_path`` wraps the module's loader so that executing its body runs under
``<import>NAME``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from guard_adapters.pytest.labels import IMPORT

Switch = Callable[[str], str]  # labels what runs next; returns the label it replaced


class LabelledLoader:
    """Wraps a module's loader so that executing its body runs under ``<import>NAME``."""

    def __init__(self, loader: Any, name: str, switch: Switch, ran: Callable[[Any], None]) -> None:
        self._loader = loader
        self._name = name
        self._switch = switch
        self._ran = ran

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._loader, attr)

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        previous = self._switch(IMPORT + self._name)
        try:
            self._loader.exec_module(module)
        finally:
            self._switch(previous)
        self._ran(module)


class ImportLabeler:
    """A meta-path finder that only labels: it asks the other finders, then wraps the loader
    of modules whose file is inside the repository (test modules excepted); ``ran`` is told
    of each module whose body ran."""

    def __init__(self, root: Path, switch: Switch, ran: Callable[[Any], None]) -> None:
        self.root = root
        self.switch = switch
        self.ran = ran

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is None:
                continue
            origin = spec.origin or ""
            loader = spec.loader
            if (
                origin.endswith(".py")
                and loader is not None
                and hasattr(loader, "exec_module")
                and self._ours(origin)
            ):
                spec.loader = LabelledLoader(loader, name, self.switch, self.ran)  # type: ignore[assignment]
            return spec
        return None

    def _ours(self, origin: str) -> bool:
        try:
            rel = Path(origin).resolve().relative_to(self.root)
        except (ValueError, OSError):
            return False
        return labelled_on_import(rel.name)


def labelled_on_import(path: str) -> bool:
    """Whether a repository file's module body runs under ``<import>`` (charged to every test):
    any but test modules and ``conftest.py`` (their bodies belong to collection and start-up)."""
    name = path.rpartition("/")[2]
    return not (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py")

"""Registers the import probe (imported only when a check needs it)."""

from __future__ import annotations

from typing import Any

from guard_core.config import Settings
from guard_core.plugins import AdapterRegistry, hookimpl


def _probe(settings: Settings) -> Any:
    from guard_adapters.imports.probe import SubprocessImportProbe

    kept = settings.guard_dir / "imports"  # the base's imports, for later checks
    return SubprocessImportProbe(settings.repo, settings.python, settings.pytest_args, kept=kept)


@hookimpl
def guard_register_adapters(registry: AdapterRegistry) -> None:
    registry.add_import_probe("python", _probe)

"""Registers the evidence refresher that ``guard run`` uses (imported only when a run needs
it: ``guard check`` never pays for coverage.py)."""

from __future__ import annotations

from typing import Any

from guard_core.config import Settings
from guard_core.plugins import AdapterRegistry, hookimpl


def _refresher(settings: Settings) -> Any:
    from guard_adapters.coverage.refresh import CoverageRefresher

    return CoverageRefresher(settings)


@hookimpl
def guard_register_adapters(registry: AdapterRegistry) -> None:
    registry.add_refresher("coverage", _refresher)

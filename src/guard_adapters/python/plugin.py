"""Registers the git/ast slicer."""

from __future__ import annotations

from guard_adapters.python.slicer import GitSlicer
from guard_core.plugins import AdapterRegistry, hookimpl


@hookimpl
def guard_register_adapters(registry: AdapterRegistry) -> None:
    registry.add_slicer("git", GitSlicer)

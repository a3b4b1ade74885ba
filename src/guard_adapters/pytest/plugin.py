"""Registers the pytest adapters."""

from __future__ import annotations

from guard_core.plugins import AdapterRegistry, hookimpl


@hookimpl
def guard_register_adapters(registry: AdapterRegistry) -> None:
    del registry

"""Registers the pytest runner and the interpreter fingerprint."""

from __future__ import annotations

from guard_adapters.pytest.environment import environment_probe
from guard_adapters.pytest.runner import PytestRunner
from guard_core.plugins import AdapterRegistry, hookimpl


@hookimpl
def guard_register_adapters(registry: AdapterRegistry) -> None:
    registry.add_runner("pytest", PytestRunner)
    registry.add_environment("python", environment_probe)

"""Adapters are chosen by name from the settings, and a plug-in's adapter wins over a
built-in of the same name."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import attrs
import pytest

from guard_core import hookimpl
from guard_core.config import Settings, load_settings
from guard_core.errors import ConfigError
from guard_core.plugins import BUILTIN_PLUGINS, AdapterRegistry, Plugins, make_plugin_manager


class _RunnerPlugin:
    def __init__(self, name: str) -> None:
        self.name = name

    @hookimpl
    def guard_register_adapters(self, registry: AdapterRegistry) -> None:
        registry.add_runner(self.name, lambda settings: SimpleNamespace(by=self.name))


def _plugins(*extra: Any) -> Plugins:
    return Plugins(make_plugin_manager(extra=extra, autoload=False))


def test_a_plugin_registering_a_builtin_name_replaces_the_builtin(tmp_path: Path) -> None:
    settings = Settings(repo=tmp_path)
    assert type(_plugins().runner(settings)).__name__ == "PytestRunner"
    assert _plugins(_RunnerPlugin("pytest")).runner(settings).by == "pytest"


def test_the_runner_setting_picks_a_registered_runner(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.guard]\nrunner = "mine"\n')
    settings = load_settings(tmp_path, {})
    assert _plugins(_RunnerPlugin("mine")).runner(settings).by == "mine"
    assert load_settings(tmp_path, {"GUARD_RUNNER": "pytest"}).runner == "pytest"


def test_an_unknown_adapter_name_is_a_clear_error_naming_the_registered_ones(
    tmp_path: Path,
) -> None:
    settings = Settings(repo=tmp_path, runner="nose", store="sqlite")
    plugins = _plugins(_RunnerPlugin("mine"))
    with pytest.raises(ConfigError, match=r"no runner adapter named 'nose' \(registered: mine, "
                       r"pytest\)"):  # fmt: skip
        plugins.runner(settings)
    with pytest.raises(ConfigError, match="registered: falkordb"):
        plugins.store(settings)


def test_an_empty_adapter_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="runner"):
        load_settings(tmp_path, {"GUARD_RUNNER": "  "}, runner=" ")


def test_the_first_registration_of_a_name_wins() -> None:
    registry = AdapterRegistry()
    registry.add_slicer("git", str)
    registry.add_slicer("git", repr)
    assert registry.slicers["git"] is str


@pytest.mark.parametrize("name", BUILTIN_PLUGINS)
def test_every_builtin_plugin_does_something(name: str) -> None:
    pm = make_plugin_manager(builtins=(name,), autoload=False)
    assert pm.get_hookcallers(pm.get_plugin(name)), f"{name} implements no guard hook"
    register = getattr(importlib.import_module(name), "guard_register_adapters", None)
    if register is not None:
        registry = AdapterRegistry()
        register(registry=registry)
        tables = attrs.asdict(registry, recurse=False).values()
        assert any(tables), f"{name}'s guard_register_adapters registers nothing"

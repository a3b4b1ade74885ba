"""The plugin manager, the adapter registry and a typed facade over the hooks."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from guard_core import hookspecs
from guard_core.config import Settings
from guard_core.errors import ConfigError, GuardError
from guard_core.logs import get_logger

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from guard_core.bases import Distance, EvidenceBase
    from guard_core.model import Decision
    from guard_core.ports import (
        EvidenceRefresher,
        GraphStore,
        ImportProbe,
        PolicyInput,
        Runner,
        Slicer,
        TrustPolicy,
        Vote,
    )
    from guard_core.rules import Rule

hookimpl = pluggy.HookimplMarker("guard")
log = get_logger("guard.plugins")

BUILTIN_PLUGINS: tuple[str, ...] = (
    "guard_core.policy",
    "guard_adapters.git.plugin",
    "guard_adapters.falkordb.plugin",
    "guard_adapters.python.plugin",
    "guard_adapters.pytest.plugin",
    "guard_adapters.coverage.plugin",
    "guard_adapters.imports.plugin",
)
"""Import strings of the built-in plugins, loaded lazily when a manager is built."""

Factory = Callable[[Settings], Any]


@attrs.define
class AdapterRegistry:
    """Named adapter factories, filled by ``guard_register_adapters`` hooks.

    The first registration of a name wins. Plug-ins registered later are called first
    (pluggy's order), so an entry-point or explicitly given plug-in that registers a built-in's
    name (``pytest``, ``falkordb``, ...) replaces it; the settings ``store``, ``slicer`` and
    ``runner`` pick an adapter by name."""

    stores: dict[str, Factory] = attrs.field(factory=dict)
    slicers: dict[str, Factory] = attrs.field(factory=dict)
    runners: dict[str, Factory] = attrs.field(factory=dict)
    policies: dict[str, Factory] = attrs.field(factory=dict)
    environments: dict[str, Factory] = attrs.field(factory=dict)
    refreshers: dict[str, Factory] = attrs.field(factory=dict)
    import_probes: dict[str, Factory] = attrs.field(factory=dict)

    @staticmethod
    def _add(table: dict[str, Factory], name: str, factory: Factory) -> None:
        if name in table:
            log.debug("adapter_shadowed", name=name, kept=repr(table[name]), ignored=repr(factory))
            return
        table[name] = factory

    def add_store(self, name: str, factory: Factory) -> None:
        """A factory returning a :class:`~guard_core.ports.GraphStore`."""
        self._add(self.stores, name, factory)

    def add_slicer(self, name: str, factory: Factory) -> None:
        """A factory returning a :class:`~guard_core.ports.Slicer`."""
        self._add(self.slicers, name, factory)

    def add_runner(self, name: str, factory: Factory) -> None:
        """A factory returning a :class:`~guard_core.ports.Runner`."""
        self._add(self.runners, name, factory)

    def add_trust_policy(self, name: str, factory: Factory) -> None:
        """A factory returning a :class:`~guard_core.ports.TrustPolicy`."""
        self._add(self.policies, name, factory)

    def add_environment(self, name: str, factory: Factory) -> None:
        """A factory returning a no-argument callable: the fingerprint of the interpreter and
        packages that run the tests (a change since the ingest widens to run-all)."""
        self._add(self.environments, name, factory)

    def add_refresher(self, name: str, factory: Factory) -> None:
        """A factory returning an :class:`~guard_core.ports.EvidenceRefresher`."""
        self._add(self.refreshers, name, factory)

    def add_import_probe(self, name: str, factory: Factory) -> None:
        """A factory returning an :class:`~guard_core.ports.ImportProbe`."""
        self._add(self.import_probes, name, factory)


def make_plugin_manager(
    builtins: Iterable[str] = BUILTIN_PLUGINS,
    extra: Iterable[object] = (),
    autoload: bool = True,
) -> pluggy.PluginManager:
    """Build a manager with the built-in plugins, ``extra`` ones, and (unless disabled) the
    third-party plugins of the ``guard`` entry-point group."""
    pm = pluggy.PluginManager("guard")
    pm.add_hookspecs(hookspecs)
    for name in builtins:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise GuardError(
                f"built-in plugin {name} cannot be imported: {exc}",
                hint="reinstall guard-graph",
            ) from exc
        pm.register(module, name=name)
    for plugin in extra:
        pm.register(plugin)
    if autoload:
        pm.load_setuptools_entrypoints("guard")
    pm.check_pending()
    return pm


class Plugins:
    """Typed facade over the hooks, so the rest of the code never calls ``pm.hook`` itself."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self.registry = AdapterRegistry()
        pm.hook.guard_register_adapters(registry=self.registry)

    def _pick(self, kind: str, table: dict[str, Factory], name: str, settings: Settings) -> Any:
        try:
            factory = table[name]
        except KeyError:
            known = ", ".join(sorted(table)) or "none"
            raise ConfigError(
                f"no {kind} adapter named {name!r} (registered: {known})",
                hint=f"set {kind} in [tool.guard] to a registered name, or install its plug-in",
            ) from None
        return factory(settings)

    def store(self, settings: Settings) -> GraphStore:
        return self._pick("store", self.registry.stores, settings.store, settings)

    def slicer(self, settings: Settings) -> Slicer:
        return self._pick("slicer", self.registry.slicers, settings.slicer, settings)

    def runner(self, settings: Settings) -> Runner:
        return self._pick("runner", self.registry.runners, settings.runner, settings)

    def environment(self, settings: Settings, name: str = "python") -> Callable[[], str] | None:
        if name not in self.registry.environments:
            return None
        return self._pick("environment", self.registry.environments, name, settings)

    def refresher(self, settings: Settings, name: str = "coverage") -> EvidenceRefresher | None:
        if name not in self.registry.refreshers:
            return None
        return self._pick("refresher", self.registry.refreshers, name, settings)

    def import_probe(self, settings: Settings, name: str = "python") -> ImportProbe | None:
        if not settings.import_probe or name not in self.registry.import_probes:
            return None
        return self._pick("import probe", self.registry.import_probes, name, settings)

    def trust_policies(self, settings: Settings) -> list[TrustPolicy]:
        names = settings.policies or tuple(sorted(self.registry.policies))
        return [self._pick("trust policy", self.registry.policies, n, settings) for n in names]

    def commit_distances(self, repo: Path, bases: Sequence[EvidenceBase]) -> dict[str, Distance]:
        found = self.pm.hook.guard_commit_distances(repo=repo, bases=bases)
        return dict(found) if found else {}

    def extra_votes(self, data: PolicyInput) -> list[Vote]:
        return [v for v in self.pm.hook.guard_trust_vote(data=data) if v is not None]

    def selection_rules(self) -> list[Rule]:
        return [r for rules in self.pm.hook.guard_selection_rules() if rules for r in rules]

    def adjust_decision(self, decision: Decision, data: PolicyInput) -> list[Decision]:
        return [d for d in self.pm.hook.guard_adjust_decision(decision=decision, data=data) if d]

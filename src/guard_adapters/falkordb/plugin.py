"""Registers the FalkorDB graph store: embedded by default, a server when
``GUARD_FALKORDB_URL`` is set."""

from __future__ import annotations

from guard_adapters.falkordb.bases import BasedGraphStore
from guard_adapters.falkordb.embedded import EmbeddedServer
from guard_adapters.falkordb.store import FalkorGraphStore, connect
from guard_adapters.git.ancestry import commit_distances
from guard_adapters.git.repo import repo_identity
from guard_core.config import Settings
from guard_core.errors import RepositoryError
from guard_core.plugins import AdapterRegistry, hookimpl


def graph_name(settings: Settings) -> str:
    """One graph per repository, named the same in every clone so a shared server can hold
    many repositories and every agent of one repository finds the same graph."""
    if settings.graph:
        return settings.graph
    try:
        return f"guard:{repo_identity(settings.repo)}"
    except RepositoryError:
        return f"guard:{settings.repo.name}"


def open_store(settings: Settings) -> FalkorGraphStore:
    """Connect (starting the embedded server if needed) and check the schema. With evidence
    kept for several commits, the store holds a graph per commit and checks the schema of a
    base when it reads or writes it."""
    url = (
        settings.falkordb_url
        or EmbeddedServer(settings.guard_dir, idle_s=settings.server_idle).ensure_running()
    )
    db = connect(url, settings.store_timeout, settings.store_query_timeout)
    if settings.kept_bases > 1:
        return BasedGraphStore(
            db,
            graph_name(settings),
            keep=settings.kept_bases,
            repo=settings.repo,
            distances=lambda bases: commit_distances(settings.repo, bases),
        )
    store = FalkorGraphStore(db, graph_name(settings))
    store.ensure_schema()
    return store


@hookimpl
def guard_register_adapters(registry: AdapterRegistry) -> None:
    registry.add_store("falkordb", open_store)

"""Modules code may hold under a name the index does not know: those no file imports under
their dotted name (the run got them through a folder put on ``sys.path``, an import by a
computed name, a loader). Their names are read under their shorter dotted names too, and
any code reading ``.name`` may read them. And any module's names are read by code that
imported it by a computed name (a cached module too: no loader sees that)."""

from __future__ import annotations

from collections.abc import Iterable

from guard_core.index_model import ANY_IMPORT, IMPORTED
from guard_core.ports import EvidenceReader


def unnamed_modules(store: EvidenceReader, modules: Iterable[str]) -> set[str]:
    """The repository modules among ``modules`` that no other file imports by their dotted
    name, test modules and ``conftest.py`` aside (pytest imports those). The run got them
    some way the index does not see (``importlib.import_module``, ``__import__``, a folder put
    on ``sys.path``, a loader), so code may hold them under a name Guard does not know."""
    found = set(modules)
    if not found:
        return found
    found -= store.modules_imported(found)
    return {m for m in found if not _pytest_module(m.rpartition(".")[2])}


def _pytest_module(leaf: str) -> bool:
    return leaf.startswith("test_") or leaf.endswith("_test") or leaf == "conftest"


def modules_of(store: EvidenceReader, names: Iterable[str]) -> set[str]:
    """The repository modules that ``names`` are in (any module prefix of one)."""
    prefixes = {
        ".".join(parts[:i]) for n in names for parts in [n.split(".")] for i in range(1, len(parts))
    }
    return store.modules_among(prefixes) if prefixes else set()


def computed_importers(
    store: EvidenceReader, names: Iterable[str]
) -> list[tuple[str, str, str, str]]:
    """Code that imports modules by computed names, as readers (``readers_of`` rows) of
    ``names`` in repository modules: judged per test by what its run imported there
    (:data:`IMPORTED`), or by having run the call, where no run records it
    (:data:`ANY_IMPORT`)."""
    if not modules_of(store, names):
        return []
    facts = (IMPORTED, ANY_IMPORT)
    rows = store.attribute_readers(facts) or []
    return [(fid, "", "", f".{fact}") for fid, fact in rows if fact in facts]


def shorter_names(store: EvidenceReader, names: Iterable[str]) -> set[str]:
    """For each name in a module of :func:`unnamed_modules`, the name under each shorter
    dotted name of that module (what importing it from a folder on ``sys.path`` binds)."""
    names = set(names)
    unnamed = unnamed_modules(store, modules_of(store, names))
    out: set[str] = set()
    for name in names:
        module = max((m for m in unnamed if name.startswith(m + ".")), key=len, default=None)
        if module is None:
            continue
        rest = name[len(module) :]
        parts = module.split(".")
        out |= {".".join(parts[i:]) + rest for i in range(1, len(parts))}
    return out

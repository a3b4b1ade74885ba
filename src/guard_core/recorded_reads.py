"""Reads by computed names that a measured run recorded: for one test, a reader's
``getattr(o, key)`` read the names its run looked up there, ``inspect.signature(f)`` the
objects its run gave it, and ``importlib.import_module(name)`` holds the modules its run
imported (``COMPUTED``, ``INTROSPECTED``, ``IMPORTED``; recorded by the collector's
``pytest/reflection.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from guard_core.index_model import COMPUTED, IMPORTED, INTROSPECTED
from guard_core.model import CoverEdge

_RECORDED_REFS = frozenset({f".{COMPUTED}", f".{INTROSPECTED}", f".{IMPORTED}"})


def only_recorded(refs: set[str]) -> bool:
    """Whether a reader reads only through recorded reflective calls."""
    return bool(refs) and refs <= _RECORDED_REFS


def recorded_edges(
    edges: Sequence[CoverEdge], refs: set[str], names: Iterable[str]
) -> list[CoverEdge]:
    """The edges of a reader whose only reads of ``names`` are recorded reflective calls
    (``getattr(o, key)``, ``inspect.signature(f)``, ``import_module(name)``), kept where the
    test's run gave those calls one of ``names``: a changed attribute's name, an object whose
    signature changed (by qualified name, or any unnamed object), a module a changed name is
    in (or one it could not name). An edge without a record keeps its test."""
    if not only_recorded(refs):
        return list(edges)
    names = tuple(names)
    leaves = {"." + n.rpartition(".")[2] for n in names} if f".{COMPUTED}" in refs else set()
    owners = (
        [_segments(n.removesuffix(".__signature__")) for n in names if n.endswith(".__signature__")]
        if f".{INTROSPECTED}" in refs
        else []
    )
    held = names if f".{IMPORTED}" in refs else ()

    def read(given: frozenset[str]) -> bool:
        if leaves & given:
            return True
        modules = [g[1:] for g in given if g.startswith("@")]
        if held and (not modules or any(_in_module(n, m) for m in modules for n in held)):
            return True  # none: the call failed, or a collector that did not record imports
        objects = [_segments(g[1:]) for g in given if g.startswith("=")]
        return bool(owners) and any(
            not obj or any(_contains(owner, obj) for owner in owners) for obj in objects
        )

    return [e for e in edges if e.names is None or read(e.names)]


def _in_module(name: str, module: str) -> bool:
    """Whether ``name`` may be in the module imported as ``module``: under that name, or one
    it ends (``plain`` is ``tests.apps.plain`` imported from a folder on ``sys.path``)."""
    return module == "*" or f".{module}." in f".{name}."


def _segments(dotted: str) -> tuple[str, ...]:
    """A dotted or qualified name's parts, ``<locals>`` left out: ``f.<locals>.g`` is ``f.g``;
    ``?`` (an object without a name) has none."""
    return tuple(p for p in dotted.split(".") if p and p not in ("<locals>", "?"))


def _contains(owner: tuple[str, ...], qualname: tuple[str, ...]) -> bool:
    """Whether a qualified name runs inside a dotted one (``C`` in ``pkg.mod.C.__init__``): a
    class's signature is read from its methods; a ``__module__`` may name another module."""
    n = len(qualname)
    return any(owner[i : i + n] == qualname for i in range(len(owner) - n + 1))

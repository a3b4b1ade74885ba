"""The static index's value objects: functions, tests, calls and the statements of module and
class bodies, as the indexer writes them and the graph gives them back."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from guard_core.model import unit_interval

COMPUTED = "*~"
"""An attribute fact: attributes read by a computed name through a builtin whose arguments a
measured run records (``getattr(o, key)``); for one test, the names its run looked up there
(:attr:`~guard_core.model.CoverEdge.names`)."""

IMPORTED = "@~"
"""An attribute fact: a module imported by a computed name through a call whose result a
measured run records (``importlib.import_module(name)``); for one test, the modules its run
imported there (``@NAME``; ``@*``: one it could not name)."""

ANY_IMPORT = "@*"
"""An attribute fact: such an import that no run records (``m = __import__(name)``, another
spelling of ``import_module``): any module."""

INTROSPECTED = "__signature__~"
"""An attribute fact: a signature read by an introspection call whose argument a measured run
records (``inspect.signature(f)``); for one test, the objects its run gave it."""


THROUGH_CLASS = "^"
"""An attribute fact's suffix: ``p^`` is ``.p`` read through a class object (``type(x).p``,
``x.__class__.p``, ``cls.p`` in a classmethod), where a property is the property object."""


def reflective_facts(names: Iterable[str]) -> set[str]:
    """The attribute facts that read any of the attribute ``names``: themselves, reads by
    computed names, and the recorded signature introspection for ``__signature__``."""
    out = {*names, "*", COMPUTED}
    if "__signature__" in out:
        out.add(INTROSPECTED)
    return out


@attrs.frozen
class StatementBinding:
    """What one top-level statement of a module or class body binds when it runs."""

    names: tuple[str, ...]
    side_effects: bool  # it may do more than bind the names (call, raise, mutate)


@attrs.frozen
class StatementRead:
    """A name a top-level statement of a module or class body reads while importing."""

    statement: int  # the statement's index in its body
    name: str


@attrs.frozen
class BodyStatements:
    """A module or class body statement by statement: what each binds (by index; None where
    the index is unknown) and what each reads, so an import-time read can be followed to the
    names it binds."""

    bindings: tuple[StatementBinding | None, ...] = ()
    reads: tuple[StatementRead, ...] = ()

    def binding(self, statement: int) -> StatementBinding | None:
        return self.bindings[statement] if 0 <= statement < len(self.bindings) else None


@attrs.frozen
class FunctionNode:
    """A function, method or pseudo-function (module or class body) from the static index."""

    id: str
    file: str
    name: str
    qualname: str
    start: int
    end: int
    has_dynamic_dispatch: bool = False
    refs: tuple[str, ...] = ()  # dotted names the code reads, resolved where possible
    # module and class bodies: what each top-level statement binds (in order) and reads
    bindings: tuple[StatementBinding, ...] = ()
    statement_refs: tuple[StatementRead, ...] = ()
    # attribute names read on any object (``x.name``); "*": by computed names (``vars``);
    # COMPUTED and INTROSPECTED: reads whose names or objects a measured run records
    attributes: tuple[str, ...] = ()
    memo: bool = False  # keeps results in a container that outlives the call, reads them back
    # functions: the lines of the expressions that make each read, keyed like a reader's
    # ``ref`` (a dotted name of ``refs``, ".name" for one of ``attributes``); a read without
    # lines here applies to every test that ran the function
    read_lines: tuple[tuple[str, frozenset[int]], ...] = ()


@attrs.frozen
class TestNode:
    """A pytest test function (parametrisations collapse into it)."""

    __test__ = False

    id: str
    file: str
    name: str
    qualname: str
    start: int
    end: int


@attrs.frozen
class CallEdge:
    """A static call: ``callee`` is the dotted name the call resolves to (``pkg.mod.fn``);
    the store links it to the function with that dotted name, wherever it is defined."""

    caller: str
    callee: str
    confidence: float = attrs.field(default=0.6, validator=unit_interval)


@attrs.frozen
class FileIndex:
    """The static index of one file: what the indexer writes for it."""

    path: str
    sha: str
    module: str | None = None  # dotted module name, None for non-importable files
    functions: tuple[FunctionNode, ...] = ()
    tests: tuple[TestNode, ...] = ()
    calls: tuple[CallEdge, ...] = ()
    imports: tuple[str, ...] = ()  # dotted names of the modules it imports
    aliases: tuple[tuple[str, str], ...] = ()  # (pkg.name, pkg.mod.name) from `from m import`
    parse_error: str | None = None

"""Module- and class-level statements: the names each binds, whether it does more (a call,
a registering decorator, a mutation), what it imports, and ``__all__``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import attrs

from guard_adapters.python.purity import PURE_DECORATORS, has_impure_call
from guard_adapters.python.syntax import DefNode, last_name

if TYPE_CHECKING:
    from guard_adapters.python.regions import Region


@attrs.frozen
class Statement:
    """A module- or class-level statement, as the slicer compares it."""

    dump: str
    start: int
    end: int
    names: tuple[str, ...] = ()  # local names it binds
    side_effects: bool = False
    imports: tuple[str, ...] = ()  # modules an import statement loads
    decorators: tuple[str, ...] = ()  # a def or class statement's, by last name
    exports: tuple[str, ...] | None = None  # ``__all__ = [...]`` of literal strings
    guards: str = ""  # an if's conditions and a try's caught types, which pick the branch


def _target_names(target: ast.expr, local: frozenset[str] = frozenset()) -> tuple[list[str], bool]:
    """Names a target binds, and whether it also mutates something (a subscript, an
    attribute). ``f.__doc__ = ...`` on a function or class ``f`` that only the same body's
    ``def``/``class`` binds (``local``) binds ``f.__doc__``."""
    if isinstance(target, ast.Name):
        return [target.id], False
    if isinstance(target, ast.Tuple | ast.List):
        names: list[str] = []
        mutates = False
        for elt in target.elts:
            sub, mut = _target_names(elt.value if isinstance(elt, ast.Starred) else elt, local)
            names += sub
            mutates |= mut
        return names, mutates
    if (
        isinstance(target, ast.Attribute)
        and target.attr == "__doc__"
        and isinstance(target.value, ast.Name)
        and target.value.id in local
    ):
        return [f"{target.value.id}.__doc__"], False
    return [], True  # any other attribute may be read by code outside the repository


def defined_names(body: list[ast.stmt]) -> frozenset[str]:
    """Names a module or class body binds only to a function or class it defines (in
    branches too): by ``def``/``class``, or ``f = g`` of such a name; never by an import or
    any other assignment (``try: from _speedups import f`` / ``def f``)."""
    defs: set[str] = set()
    aliases: dict[str, set[str]] = {}  # f = g
    other: set[str] = set()
    pending = list(body)
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, DefNode):
            defs.add(stmt.name)
        elif isinstance(stmt, _BRANCHING):
            pending += _branch_statements(stmt)
        elif (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Name)
        ):
            aliases.setdefault(stmt.targets[0].id, set()).add(stmt.value.id)
        else:
            other |= set(statement_info(stmt, "").names)
    found = defs - other
    while True:
        more = {a for a, values in aliases.items() if a not in other and values <= found}
        if more <= found:
            return frozenset(found)
        found |= more


_BRANCHING = (ast.If, ast.Try, getattr(ast, "TryStar", ast.Try))


def _never_runs(test: ast.expr | None) -> bool:
    """``if TYPE_CHECKING:`` / ``if typing.TYPE_CHECKING:`` / ``if False:``."""
    if isinstance(test, ast.Constant):
        return test.value is False
    return (
        last_name(test) == "TYPE_CHECKING" if isinstance(test, ast.Name | ast.Attribute) else False
    )


def _branch_statements(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements of every branch of an ``if`` or a ``try`` that can run (not the body of
    ``if TYPE_CHECKING:``)."""
    body = [] if isinstance(stmt, ast.If) and _never_runs(stmt.test) else stmt.body  # type: ignore[attr-defined]
    out = [*body, *getattr(stmt, "orelse", ()), *getattr(stmt, "finalbody", ())]
    for handler in getattr(stmt, "handlers", ()):
        out += handler.body
    return out


def _guards(stmt: ast.stmt) -> str:
    """What picks the branch that runs: an ``if``'s condition, a ``try``'s caught types (and
    the nested statements' own guards)."""
    parts = [ast.dump(stmt.test)] if isinstance(stmt, ast.If) else []
    parts += [ast.dump(h.type) if h.type else "*" for h in getattr(stmt, "handlers", ())]
    parts += [_guards(s) for s in _branch_statements(stmt) if isinstance(s, _BRANCHING)]
    return type(stmt).__name__ + "(" + ",".join(parts) + ")"


def exports_unbound(module: Region) -> bool:
    """Whether ``from <module> import *`` may fail: its ``__all__`` names something the
    module does not bind at its top level, or is anything but one literal list or tuple of
    strings (``__all__ += ...``, ``__all__.append(...)``, built in a branch). With no
    ``__all__``, a star import binds whatever public names there are."""
    if not isinstance(module.node, ast.Module):
        return True
    if "__all__" not in module.text:
        return False
    exports = [s for s in module.bindings if "__all__" in s.names]
    mentions = sum(
        isinstance(n, ast.Name) and n.id == "__all__"
        for stmt in module.node.body
        for n in ast.walk(stmt)
    )
    if not exports and not mentions:
        return False
    if len(exports) != 1 or mentions != 1 or exports[0].exports is None:
        return True
    bound = {n for s in module.bindings for n in s.names}  # a star import's names: unknown
    return bool(set(exports[0].exports) - bound)


def _literal_strings(value: ast.expr | None) -> tuple[str, ...] | None:
    if isinstance(value, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
    ):
        return tuple(e.value for e in value.elts)  # type: ignore[attr-defined]
    return None


def _branching_info(stmt: ast.stmt, dump: str, local: frozenset[str]) -> Statement:
    """An ``if`` or ``try`` at module or class level: it binds what its branches bind, and
    does more only where a branch, a condition or a caught type does (a version check, an
    ``ImportError`` fallback)."""
    start, end = statement_span(stmt)
    nested = [statement_info(s, "", local) for s in _branch_statements(stmt)]
    tests = [getattr(stmt, "test", None)] + [h.type for h in getattr(stmt, "handlers", ())]
    names = [n for s in nested for n in s.names if n != "__doc__"]
    names += [h.name for h in getattr(stmt, "handlers", ()) if h.name]
    return Statement(
        dump=dump,
        start=start,
        end=end,
        names=tuple(names),
        side_effects=any(s.side_effects for s in nested)
        or any(t is not None and has_impure_call(t) for t in tests)
        or any(s.exports is not None or "__all__" in s.names for s in nested),
        imports=tuple(m for s in nested for m in s.imports),
        guards=_guards(stmt),
    )


def statement_info(stmt: ast.stmt, dump: str, local: frozenset[str] = frozenset()) -> Statement:
    """What a top-level (module or class) statement binds and whether it does more."""
    if isinstance(stmt, _BRANCHING):
        return _branching_info(stmt, dump, local)
    start, end = statement_span(stmt)
    names: list[str] = []
    effects = False
    imports: list[str] = []
    decorators: tuple[str, ...] = ()
    exports: tuple[str, ...] | None = None
    if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            bound, mutates = _target_names(target, local)
            names += bound
            effects |= mutates
        value = stmt.value
        effects |= value is not None and has_impure_call(value)
        if "__all__" in names:  # what a star import binds: followed name by name if literal
            exports = None if isinstance(stmt, ast.AugAssign) else _literal_strings(value)
            effects |= exports is None
    elif isinstance(stmt, ast.Import):
        names = [a.asname or a.name.split(".")[0] for a in stmt.names]
        imports = [a.name for a in stmt.names]
    elif isinstance(stmt, ast.ImportFrom):
        names = [a.asname or a.name for a in stmt.names]
        base = "." * stmt.level + (stmt.module or "")
        imports = [base]
        effects = any(a.name == "*" for a in stmt.names)
    elif isinstance(stmt, DefNode):
        names = [stmt.name]
        decorators = tuple(last_name(d) for d in stmt.decorator_list)
        # decorators run when the definition runs: one that may register is an effect
        effects = any(d not in PURE_DECORATORS for d in decorators)
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        names = ["__doc__"] if isinstance(stmt.value.value, str) else []
    elif isinstance(stmt, ast.Pass):
        pass
    else:
        effects = True
    return Statement(
        dump=dump,
        start=start,
        end=end,
        names=tuple(names),
        side_effects=effects,
        imports=tuple(imports),
        decorators=decorators,
        exports=exports,
    )


def statement_span(node: ast.stmt) -> tuple[int, int]:
    start = node.lineno
    if isinstance(node, DefNode) and node.decorator_list:
        start = min(start, *(d.lineno for d in node.decorator_list))
    return start, node.end_lineno or node.lineno

"""Memo functions: code that keeps what it computed in a container that outlives the call
and reads it back (a call that finds the entry runs none of the code that computed it)."""

from __future__ import annotations

import ast

from guard_adapters.python.syntax import FunctionNode, last_name, own_nodes


def _local_names(fn: FunctionNode) -> set[str]:
    args = fn.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    out = {a.arg for a in params if a is not None}
    declared: set[str] = set()
    for n in own_nodes(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, ast.Global | ast.Nonlocal):
            declared.update(n.names)
    return out - declared


def _container(node: ast.expr, local: set[str]) -> str | None:
    """A key for a container expression that may outlive the call: a global or closure name,
    or an attribute of anything (``self._cache``, ``cls._items``, ``ctx.inferred``)."""
    if isinstance(node, ast.Name):
        return None if node.id in local else node.id
    if isinstance(node, ast.Attribute):
        return ast.dump(node)
    return None


def _computed(value: ast.expr | None) -> bool:
    return value is not None and any(isinstance(n, ast.Call) for n in ast.walk(value))


def _attribute_key(node: ast.Attribute) -> str:
    return f"{ast.dump(node.value)}.{node.attr}"


def _kept_read(node: ast.AST, kept: set[str]) -> set[str]:
    """Attributes read in ``node`` (``x._t``, ``hasattr(x, "_t")``) and the names of ``kept``
    (the function's ``global``/``nonlocal`` names) it loads."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
            out.add(_attribute_key(n))
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in kept:
            out.add(n.id)
        elif (
            isinstance(n, ast.Call)
            and last_name(n.func) in ("hasattr", "getattr")
            and len(n.args) >= 2
            and isinstance(n.args[1], ast.Constant)
            and isinstance(n.args[1].value, str)
        ):
            out.add(f"{ast.dump(n.args[0])}.{n.args[1].value}")
    return out


def keeps_lazy_attribute(fn: FunctionNode) -> bool:
    """Serves a value it keeps on an object or in a global (``global _lexer``): it tests it
    (``if x._t is not None``, ``hasattr``, a ``try`` around the return), stores it and returns
    it. A later call finds it set and returns it without running what computed it."""
    kept = {
        name for n in own_nodes(fn) if isinstance(n, ast.Global | ast.Nonlocal) for name in n.names
    }
    stored: set[str] = set()
    tested: set[str] = set()
    returned: set[str] = set()
    for n in own_nodes(fn):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            stored.add(_attribute_key(n))
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in kept:
            stored.add(n.id)
        elif isinstance(n, ast.If | ast.IfExp | ast.While):
            tested |= _kept_read(n.test, kept)
        elif isinstance(n, ast.Try):
            tested |= {a for s in n.body if isinstance(s, ast.Return) for a in _kept_read(s, kept)}
        elif isinstance(n, ast.Return) and n.value is not None:
            returned |= _kept_read(n.value, kept)
    return bool(stored & tested & returned)


def is_memo(fn: FunctionNode) -> bool:
    """Stores a computed value (one with a call in it) in a container and reads entries of it
    back (``C[k]``, ``C.get(k)``), or keeps one on an object (``keeps_lazy_attribute``); a
    registry that stores what it was given is not one."""
    if keeps_lazy_attribute(fn):
        return True
    local = _local_names(fn)
    written: set[str] = set()
    read: set[str] = set()
    for n in own_nodes(fn):
        if isinstance(n, ast.Assign) and _computed(n.value):
            for target in n.targets:
                if isinstance(target, ast.Subscript):
                    key = _container(target.value, local)
                    written |= {key} if key is not None else set()
        elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
            key = _container(n.value, local)
            read |= {key} if key is not None else set()
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            key = _container(n.func.value, local)
            if key is not None and n.func.attr in ("get", "setdefault"):
                read.add(key)
            if (
                key is not None
                and n.func.attr == "setdefault"
                and len(n.args) > 1
                and _computed(n.args[1])
            ):
                written.add(key)
    return bool(written & read)

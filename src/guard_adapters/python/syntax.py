"""Small helpers over the stdlib ``ast`` that the region, statement and read analyses share."""

from __future__ import annotations

import ast
from collections.abc import Iterator

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def last_name(node: ast.expr) -> str:
    """``pkg.mod.fn`` -> ``fn``; ``fn(...)`` -> ``fn``; anything else -> ``""``."""
    while isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Walk ``node`` without descending into nested function or class definitions."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        yield child
        if not isinstance(child, DefNode):
            stack.extend(ast.iter_child_nodes(child))

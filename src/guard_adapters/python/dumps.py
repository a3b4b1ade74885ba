"""Normal forms of code for comparing two versions of a region: statements dumped without
comments and formatting, nested definitions stubbed, a definition's header apart."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterable

from guard_adapters.python.syntax import DefNode


def docstring_of(body: list[ast.stmt]) -> str | None:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        value = body[0].value.value
        if isinstance(value, str):
            return value
    return None


class _StubDefs(ast.NodeTransformer):
    """Replace nested definitions with a marker: their bodies are regions of their own."""

    def __init__(self, keep_header: bool) -> None:
        self.keep_header = keep_header

    def _stub(self, node: DefNode) -> ast.stmt:
        label = f"<def {node.name}>"
        if self.keep_header:
            label += " " + header_dump(node)
        return ast.Expr(ast.Constant(label))

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _stub


def _contains_def(node: ast.AST) -> bool:
    return any(isinstance(n, DefNode) for n in ast.walk(node))


def dump_statements(stmts: Iterable[ast.stmt], keep_header: bool) -> list[str]:
    out = []
    for stmt in stmts:
        if isinstance(stmt, DefNode):
            out.append(ast.dump(_StubDefs(keep_header)._stub(stmt)))
        elif _contains_def(stmt):
            out.append(ast.dump(_StubDefs(keep_header).visit(copy.deepcopy(stmt))))
        else:
            out.append(ast.dump(stmt))
    return out


def header_dump(node: DefNode) -> str:
    parts = [type(node).__name__, node.name, *(ast.dump(d) for d in node.decorator_list)]
    if isinstance(node, ast.ClassDef):
        parts += [ast.dump(b) for b in node.bases] + [ast.dump(k) for k in node.keywords]
    else:
        parts += [ast.dump(node.args), ast.dump(node.returns) if node.returns else ""]
    params = getattr(node, "type_params", None)
    if params:
        parts += [ast.dump(p) for p in params]
    return "\n".join(parts)

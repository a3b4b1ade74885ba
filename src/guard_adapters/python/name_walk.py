"""One walk of a module's syntax tree that builds its scopes (:mod:`.scopes`) and lists, in
order, the reads the index records: names and attribute chains (with their context), calls,
imports.

The walk visits nodes in source order, except where Python binds names otherwise (as libcst's
scope analysis does): a function's parameters and body in its own scope, its defaults,
annotations and decorators in the enclosing one; a comprehension's first iterable outside it; a
``for`` loop's target before its iterable. Each assignment statement, once left, makes its
names visible to the reads after it in the same scope.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from guard_adapters.python.scopes import Access, Pseudo, Scope, dotted_names, name_of

# (kind, node, context, scope): kind is "name", "attr", "call", "import"; context "load",
# "store" or "del"; scope None for a name no scope analysis sees (a keyword argument's, a
# ``global`` statement's, an import's)
Read = tuple[str, object, str, Scope | None]

_CONTEXT = {ast.Load: "load", ast.Store: "store", ast.Del: "del"}


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


class NameWalk:
    def __init__(self) -> None:
        self.scope = Scope("global", None)
        self.reads: list[Read] = []
        self.scopes: dict[int, Scope] = {}  # id(node) -> the scope a read node is in
        self.accesses: dict[int, list[Access]] = {}
        self._pending: list[tuple[Access, object, str, ast.Attribute | None]] = []
        self._chains: list[ast.Attribute | None] = [None]  # outermost chain, per call
        self._defs: list[bool] = []  # enclosing definitions, innermost last: a def?
        self._muted = 0  # inside an annotation no running code evaluates
        self._keep: list[Pseudo] = []  # ids of pseudo-nodes must outlive the walk

    def walk(self, tree: ast.Module) -> NameWalk:
        self._body(tree.body)
        self._resolve()
        return self

    # -- bookkeeping -------------------------------------------------------------------

    def _read(self, kind: str, node: object, context: str, scope: Scope | None) -> None:
        if not self._muted:
            self.reads.append((kind, node, context, scope))

    def _load(self, node: ast.expr | Pseudo, context: str = "load") -> None:
        access = Access(self.scope)
        self._pending.append((access, node, name_of(node) or "", self._chains[-1]))
        self.scopes[id(node)] = self.scope
        self._read("name", node, context, self.scope)

    def _unscoped(self, name: str, lineno: int, end: int | None = None) -> None:
        node = Pseudo(name, lineno, end)
        self._keep.append(node)
        self._read("name", node, "load", None)

    def _capture(self, name: str | None, lineno: int, end: int | None = None) -> None:
        if name is not None:  # a pattern's capture is a read to the scope analysis
            node = Pseudo(name, lineno, end)
            self._keep.append(node)
            self._load(node)

    def _resolve(self) -> None:
        for access, node, name, chain in self._pending:
            if chain is not None:
                for dotted, end in dotted_names(chain):
                    if access.scope.binds(dotted):
                        node, name = end, dotted
                        break
            access.resolve(name)
            self.accesses.setdefault(id(node), []).append(access)
        self._pending = []

    def _in(self, scope: Scope, nodes: Iterable[ast.AST | None]) -> None:
        saved, self.scope = self.scope, scope
        try:
            for node in nodes:
                if node is not None:
                    self.visit(node)
        finally:
            self.scope = saved

    def _body(self, statements: Iterable[ast.AST]) -> None:
        for statement in statements:
            self.visit(statement)

    def _left(self) -> None:
        self.scope.count += 1

    # -- traversal -----------------------------------------------------------------------

    def visit(self, node: ast.AST) -> None:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is not None:
            method(node)
        else:
            self.generic(node)

    def generic(self, node: ast.AST) -> None:
        for _, value in ast.iter_fields(node):
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def visit_Name(self, node: ast.Name) -> None:
        context = _CONTEXT[type(node.ctx)]
        if context == "store":
            self.scope.assign(node.id)
        else:
            self._load(node, context)

    def visit_Constant(self, node: ast.Constant) -> None:
        if name_of(node) is not None:  # None, True, False
            self._load(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.scopes[id(node)] = self.scope
        self._read("attr", node, _CONTEXT[type(node.ctx)], self.scope)
        if self._chains[-1] is None:
            self._chains[-1] = node
        self.visit(node.value)
        if self._chains[-1] is node:
            self._chains[-1] = None

    def visit_Call(self, node: ast.Call) -> None:
        self._read("call", node, "load", self.scope)
        self._chains.append(None)
        self.visit(node.func)
        for arg in sorted([*node.args, *node.keywords], key=_position):  # in source order
            if isinstance(arg, ast.keyword):
                self._keyword(arg)
            else:
                self.visit(arg)
        self._chains.pop()

    def visit_IfExp(self, node: ast.IfExp) -> None:
        for part in (node.body, node.test, node.orelse):  # in source order
            self.visit(part)

    def visit_Dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values, strict=True):
            if key is not None:
                self.visit(key)
            self.visit(value)

    def _keyword(self, keyword: ast.keyword) -> None:
        if keyword.arg is not None:
            self._unscoped(keyword.arg, keyword.lineno)
        self.visit(keyword.value)

    def _assigning(self, node: ast.AST) -> None:
        self.generic(node)
        self._left()

    visit_Assign = visit_AugAssign = visit_NamedExpr = _assigning

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.target)
        # a local variable's annotation is never evaluated: no read (the scopes still see it)
        unevaluated = bool(self._defs) and self._defs[-1]
        self._muted += unevaluated
        self.visit(node.annotation)
        self._muted -= unevaluated
        if node.value is not None:
            self.visit(node.value)
        self._left()

    def _declaring(self, node: ast.Global | ast.Nonlocal) -> None:
        for name in node.names:
            self.scope.declare(name, isinstance(node, ast.Nonlocal))
            self._unscoped(name, node.lineno)
        self._left()

    visit_Global = visit_Nonlocal = _declaring

    def visit_Import(self, node: ast.Import) -> None:
        self._read("import", node, "load", self.scope)
        aliases = tuple((a.name, a.asname) for a in node.names)
        for alias in node.names:
            if alias.asname is not None:
                self.scope.assign_import(alias.asname, "", aliases)
            else:
                parts = alias.name.split(".")
                for i in range(len(parts), 0, -1):
                    self.scope.assign_import(".".join(parts[:i]), "", aliases)
        self._left()

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self._read("import", node, "load", self.scope)
        if not (len(node.names) == 1 and node.names[0].name == "*"):
            module = "." * node.level + (node.module or "")
            aliases = tuple((a.name, a.asname) for a in node.names)
            for alias in node.names:
                self.scope.assign_import(alias.asname or alias.name, module, aliases)
        self._left()

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.target)
        self._left()
        self.visit(node.iter)
        self._body(node.body)
        self._body(node.orelse)

    visit_AsyncFor = visit_For

    def visit_withitem(self, node: ast.withitem) -> None:
        self.visit(node.context_expr)
        if node.optional_vars is not None:
            self.visit(node.optional_vars)
            self._left()
        self._left()

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name is not None:
            self.scope.assign(node.name)
            self._left()
        self._body(node.body)

    def _type_scope(self, node: ast.AST) -> Scope | None:
        params = getattr(node, "type_params", None)
        if not params:
            return None
        scope = Scope("annotation", self.scope)
        self._in(scope, params)
        return scope

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.assign(node.name)
        outer = self.scope
        typed = self._type_scope(node)
        enclosing = typed or outer
        self._defs.append(True)
        saved, self.scope = self.scope, Scope("function", enclosing, node.name)
        try:
            self._parameters(node.args, enclosing)
            self._body(node.body)
        finally:
            self.scope = saved
        self._in(enclosing, [*node.decorator_list, node.returns])
        self._defs.pop()
        self._left()

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node: ast.Lambda) -> None:
        outer = self.scope
        self.scope = Scope("function", outer, None)
        try:
            self._parameters(node.args, outer)
            self.visit(node.body)
        finally:
            self.scope = outer

    def _parameters(self, args: ast.arguments, enclosing: Scope) -> None:
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
        pairs = [
            *zip(positional, [*defaults, *args.defaults], strict=True),
            *([(args.vararg, None)] if args.vararg else []),
            *zip(args.kwonlyargs, args.kw_defaults, strict=True),
            *([(args.kwarg, None)] if args.kwarg else []),
        ]
        for arg, default in pairs:
            self.scope.assign(arg.arg)
            self._in(enclosing, [default, arg.annotation])
        self._left()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.assign(node.name)
        outer = self.scope
        self._body(node.decorator_list)
        typed = self._type_scope(node)
        enclosing = typed or outer
        self.scope = enclosing
        try:
            for base in node.bases:
                self.visit(base)
            for keyword in node.keywords:
                self._keyword(keyword)
            self._defs.append(False)
            self.scope = Scope("class", enclosing, node.name)
            self._body(node.body)
            self._defs.pop()
        finally:
            self.scope = outer
        self._left()

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        first, *inner = node.generators
        self.visit(first.iter)
        outer = self.scope
        self.scope = Scope("comprehension", outer)
        try:
            self.visit(first.target)
            self._left()
            self._body(first.ifs)
            for generator in inner:
                self.visit(generator.target)
                self.visit(generator.iter)
                self._body(generator.ifs)
            for _ in inner:
                self._left()
            if isinstance(node, ast.DictComp):
                self.visit(node.key)
                self.visit(node.value)
            else:
                self.visit(node.elt)
        finally:
            self.scope = outer

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_TypeAlias(self, node: ast.AST) -> None:
        self.visit(node.name)  # type: ignore[attr-defined]
        scope = self._type_scope(node) or Scope("annotation", self.scope)
        self._in(scope, [node.value])  # type: ignore[attr-defined]
        self._left()

    def _type_param(self, node: ast.AST) -> None:
        self.scope.assign(node.name)  # type: ignore[attr-defined]
        for part in ("bound", "default_value"):  # a default (3.13) is read too; libcst misses
            value = getattr(node, part, None)  # it on a def's or class's parameters
            if value is not None:
                self.visit(value)
        self._left()

    visit_TypeVar = visit_ParamSpec = visit_TypeVarTuple = _type_param

    # -- patterns: their captures are reads to the scope analysis ------------------------

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.pattern is not None:
            self.visit(node.pattern)
        self._capture(node.name, node.end_lineno or node.lineno)

    def visit_MatchSingleton(self, node: ast.MatchSingleton) -> None:
        self._capture(str(node.value), node.lineno)  # ``case None:`` reads the name None

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        self._capture(node.name, node.lineno)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        for key, pattern in zip(node.keys, node.patterns, strict=True):
            self.visit(key)
            self.visit(pattern)
        self._capture(node.rest, node.end_lineno or node.lineno)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        self.visit(node.cls)
        self._body(node.patterns)
        for attr, pattern in zip(node.kwd_attrs, node.kwd_patterns, strict=True):
            self._capture(attr, pattern.lineno)
            self.visit(pattern)

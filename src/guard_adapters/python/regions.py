"""Regions of a Python module: the code units Guard gives ids to, and which lines each owns.

A region is a function (``path::Qual.name``), a class body (``path::Cls.<body>``) or the module's
top-level code (``path::<module>``). Every line of a file has exactly one owner, so every change
and every executed line lands somewhere. A function owns its body; its decorators and ``def``
line belong to the enclosing region, because they run when the enclosing code runs.

Parsing uses the stdlib ``ast``: it is 50x faster than libcst here and ignores comments and
formatting, which is what comparing two versions of a region needs. The slicer, the indexer and
the coverage mapper all take their ids from this one module so the ids always agree.
"""

from __future__ import annotations

import ast
import copy
import functools
import sys
from collections.abc import Iterable, Iterator

import attrs

from guard_core.model import CLASS_BODY, MODULE_SCOPE, RegionKind, node_id

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef

PURE_CALLS = frozenset(
    {
        "bool",
        "bytes",
        "cast",
        "compile",
        "defaultdict",
        "dict",
        "field",
        "float",
        "frozenset",
        "getLogger",
        "int",
        "list",
        "namedtuple",
        "NamedTuple",
        "NewType",
        "object",
        "OrderedDict",
        "ParamSpec",
        "set",
        "str",
        "tuple",
        "TypeVar",
        "TypeVarTuple",
        "TypedDict",
        "Path",
        "PurePath",
        "escape",
        "partial",
        "itemgetter",
        "attrgetter",
    }
)
"""Callables whose call at import time only builds a value (no registration, no I/O)."""

PURE_DECORATORS = frozenset(
    {
        "abstractmethod",
        "abstractproperty",
        "asynccontextmanager",
        "cache",
        "cached_property",
        "classmethod",
        "contextmanager",
        "deleter",
        "final",
        "getter",
        "lru_cache",
        "no_type_check",
        "overload",
        "override",
        "property",
        "runtime_checkable",
        "setter",
        "staticmethod",
        "total_ordering",
        "wraps",
        "dataclass",
        "unique",
        "deprecated",
    }
)
"""Decorators that wrap or mark a function without registering it anywhere."""

_DYNAMIC_BUILTINS = frozenset({"eval", "exec", "__import__", "globals", "locals", "vars"})
_DYNAMIC_ATTR_CALLS = frozenset({"getattr", "setattr", "delattr"})


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


_PATCHED_MODULES = frozenset({"sys", "builtins"})  # hold repository objects often


def _foreign_star(node: ast.AST) -> bool:
    """``from M import *`` of a module outside the standard library."""
    if not isinstance(node, ast.ImportFrom) or all(a.name != "*" for a in node.names):
        return False
    return bool(node.level) or (node.module or "").partition(".")[0] not in sys.stdlib_module_names


class ModuleFacts:
    """What some questions about one region need of its whole module, computed on first use
    (shared by the module's regions)."""

    def __init__(self, path: str, tree: ast.Module) -> None:
        self.path = path
        self.tree = tree

    @functools.cached_property
    def stdlib_names(self) -> frozenset[str]:
        """Names the module binds only by ``import M`` of a standard-library module, and binds
        nowhere else (no assignment, argument, other import...): introspecting an object read
        through one (``tokenize._compile.__wrapped__``) introspects a standard-library object.
        Not ``sys`` and ``builtins`` (``sys.stdout`` is often a repository object), not in a
        module with a star import from elsewhere, and not a package of the repository named
        like a standard-library module (this file's own top folders)."""
        imported: set[str] = set()
        other: set[str] = set()
        for n in ast.walk(self.tree):
            if _foreign_star(n):
                return frozenset()  # it may bind any name
            if isinstance(n, ast.Import):
                for alias in n.names:
                    bound = alias.asname or alias.name.partition(".")[0]
                    top = alias.name.partition(".")[0]
                    stdlib = top in sys.stdlib_module_names and top not in _PATCHED_MODULES
                    (imported if stdlib else other).add(bound)
            elif isinstance(n, ast.ImportFrom):
                other.update(alias.asname or alias.name for alias in n.names)
            elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                other.add(n.id)
            elif isinstance(n, ast.arg):
                other.add(n.arg)
            elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                other.add(n.name)
            elif isinstance(n, ast.Global | ast.Nonlocal):
                other.update(n.names)
            elif isinstance(n, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and n.name:
                other.add(n.name)
            elif isinstance(n, ast.MatchMapping) and n.rest:
                other.add(n.rest)
        parts = self.path.replace("\\", "/").split("/")
        own = {part.removesuffix(".py") for part in parts[:-1]} | {parts[-1].removesuffix(".py")}
        return frozenset(imported - other - own)


@attrs.frozen(slots=False)
class Region:
    """One function, class body or module body.

    The normalised forms (``header``, ``doc``, ``body``, ``statements``) are computed on first
    use: mapping coverage lines needs only the spans, and comparing two versions needs them
    only for regions whose text differs.
    """

    id: str
    qualname: str
    name: str
    kind: RegionKind
    start: int  # first line, decorators included
    end: int
    def_line: int  # the ``def``/``class`` line (1 for a module)
    decorators: tuple[str, ...] = ()
    parent: str | None = None  # id of the enclosing region
    text: str = ""  # the region's source lines, verbatim
    node: ast.AST | None = attrs.field(default=None, eq=False, repr=False)
    module: ModuleFacts | None = attrs.field(default=None, eq=False, repr=False)

    @functools.cached_property
    def header(self) -> str:
        """Decorators, signature, bases: what runs when the definition runs."""
        return header_dump(self.node) if isinstance(self.node, DefNode) else ""

    @functools.cached_property
    def doc(self) -> str | None:
        body = getattr(self.node, "body", None)
        return _docstring(body) if isinstance(body, list) else None

    @functools.cached_property
    def body(self) -> str:
        """What runs when the function is called (functions only)."""
        if not isinstance(self.node, ast.FunctionDef | ast.AsyncFunctionDef):
            return ""
        stmts = self.node.body[1:] if _docstring(self.node.body) is not None else self.node.body
        return "\n".join(dump_statements(stmts, keep_header=True))

    @functools.cached_property
    def statements(self) -> tuple[Statement, ...]:
        """Top-level statements (class and module bodies only)."""
        if not isinstance(self.node, ast.ClassDef | ast.Module):
            return ()
        dumps = dump_statements(self.node.body, keep_header=False)
        local = defined_names(self.node.body)
        return tuple(
            statement_info(s, d, local) for s, d in zip(self.node.body, dumps, strict=True)
        )

    @functools.cached_property
    def bindings(self) -> tuple[Statement, ...]:
        """Like :attr:`statements` (spans, names bound, side effects) without normal forms."""
        if not isinstance(self.node, ast.ClassDef | ast.Module):
            return ()
        local = defined_names(self.node.body)
        return tuple(statement_info(s, "", local) for s in self.node.body)

    @functools.cached_property
    def attributes(self) -> frozenset[str]:
        """Attribute names this region's own code reads on any object (``x.name``,
        ``getattr(x, "name")``); ``*`` when it reads attributes by computed names (``vars``,
        ``dir``, ``__dict__``, ``getattr`` with a variable, ``eval``)."""
        return frozenset(self.attribute_spans)

    @functools.cached_property
    def attribute_spans(self) -> dict[str, frozenset[Span]]:
        """:attr:`attributes`, each with the line spans of the expressions that read it."""
        if self.node is None:
            return {}
        stdlib = self.module.stdlib_names if self.module else frozenset()
        return attribute_read_spans(self.node, stdlib)

    @functools.cached_property
    def dynamic_dispatch(self) -> bool:
        return isinstance(
            self.node, ast.FunctionDef | ast.AsyncFunctionDef
        ) and has_dynamic_dispatch(self.node)

    @functools.cached_property
    def memo(self) -> bool:
        """A function that keeps what it computed in a container that outlives the call (a
        module-level dict, ``self._cache``, ``cls._registry``) and reads it back: a call that
        finds the entry runs none of the code that computed it."""
        return isinstance(self.node, ast.FunctionDef | ast.AsyncFunctionDef) and is_memo(self.node)


@attrs.frozen(slots=False)
class ModuleRegions:
    """All regions of one file and the owner of each line."""

    path: str
    regions: dict[str, Region]
    owners: tuple[str, ...]  # owners[line - 1] is the id of the region that owns ``line``

    def owner(self, line: int) -> str:
        if 1 <= line <= len(self.owners):
            return self.owners[line - 1]
        return node_id(self.path, MODULE_SCOPE)

    def functions(self) -> Iterator[Region]:
        return (r for r in self.regions.values() if r.kind is RegionKind.FUNCTION)


def _last_name(node: ast.expr) -> str:
    """``pkg.mod.fn`` -> ``fn``; ``fn(...)`` -> ``fn``; anything else -> ``""``."""
    while isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def has_impure_call(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and _last_name(n.func) not in PURE_CALLS for n in ast.walk(node)
    )


def _is_dynamic_call(call: ast.Call) -> bool:
    name = _last_name(call.func) if isinstance(call.func, ast.Name | ast.Attribute) else ""
    if isinstance(call.func, ast.Name) and name in _DYNAMIC_BUILTINS:
        return True
    if name in _DYNAMIC_ATTR_CALLS and isinstance(call.func, ast.Name):
        return len(call.args) < 2 or not isinstance(call.args[1], ast.Constant)
    if name == "import_module":
        return True
    # handlers[name](**kwargs), getattr(obj, name)(**kwargs)
    has_star_kwargs = any(k.arg is None for k in call.keywords)
    return has_star_kwargs and isinstance(call.func, ast.Subscript | ast.Call)


def own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Walk ``node`` without descending into nested function or class definitions."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        yield child
        if not isinstance(child, DefNode):
            stack.extend(ast.iter_child_nodes(child))


_OPEN_READS = frozenset({"vars", "dir", "getmembers", "eval", "exec", "__import__", "globals"})
_DOC_READS = frozenset(
    {
        "help",
        "getdoc",
        "cleandoc",
        "render_doc",
        "getcomments",
        "testmod",
        "DocTestSuite",
        "DocTestFinder",
        "run_docstring_examples",
        "testfile",
    }
)
_SIGNATURE_READS = frozenset(
    {"signature", "getfullargspec", "getargspec", "getcallargs", "get_type_hints"}
)


_RAISES = frozenset(
    {
        "raises",
        "assertRaises",
        "assertRaisesRegex",
        "assertRaisesRegexp",
        "assertWarns",
        "assertWarnsRegex",
        "warns",
        "suppress",
        "assert_raises",
        "assert_raises_regex",
        "RaisesGroup",
        "raises_regex",
    }
)


def _guarded(node: ast.AST) -> set[int]:
    """Nodes under a ``try`` body with handlers or a ``with pytest.raises(...)``-like block:
    a call there may fail on purpose before it reaches the callee's body."""
    out: set[int] = set()
    if isinstance(node, DefNode) and any(_last_name(d) == "xfail" for d in node.decorator_list):
        return {id(n) for n in ast.walk(node)}  # expected to fail: any call may, on purpose
    for n in own_nodes(node) if isinstance(node, DefNode | ast.ClassDef | ast.Module) else ():
        tried = isinstance(n, ast.Try | getattr(ast, "TryStar", ast.Try)) and bool(n.handlers)
        expects = isinstance(n, ast.With | ast.AsyncWith) and any(
            isinstance(i.context_expr, ast.Call) and _last_name(i.context_expr.func) in _RAISES
            for i in n.items
        )
        for stmt in n.body if tried or expects else ():  # type: ignore[attr-defined]
            out.update(id(m) for m in ast.walk(stmt))
    return out


def _patched(call: ast.Call, name: str) -> set[str]:
    """Attributes a mock replaces (``patch("m.C.f")``, ``patch.multiple(C, f=...)``): a test
    that calls through the mock never runs ``f``, yet an autospec mock checks its signature."""
    if (
        name == "patch"
        and call.args
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    ):
        return {call.args[0].value.rpartition(".")[2]}
    if name == "multiple":
        return {k.arg for k in call.keywords if k.arg}
    return set()


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _root(node: ast.expr) -> str | None:
    """``a`` for ``a.b.c``; None when the chain starts with anything but a name."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def attribute_reads(node: ast.AST, stdlib: frozenset[str] = frozenset()) -> frozenset[str]:
    """The attribute names of :func:`attribute_read_spans`."""
    return frozenset(attribute_read_spans(node, stdlib))


Span = tuple[int, int]  # first and last line of the expression that makes a read


def attribute_read_spans(
    node: ast.AST, stdlib: frozenset[str] = frozenset()
) -> dict[str, frozenset[Span]]:
    """``name`` for an attribute read as a value, ``name()`` for one only called
    (``x.name(...)``): a call that reaches a repository method runs its body, so its evidence
    shows it. A call that may fail on purpose (under ``try`` or ``pytest.raises``) counts as
    a value read. A dunder read through ``stdlib``, names bound only to standard-library
    modules (``tokenize._compile.__wrapped__``), introspects no repository function: it is
    not one. Each name comes with the line spans of the expressions that read it."""
    spans: dict[str, set[Span]] = {}

    def add(name: str, at: ast.expr) -> None:
        spans.setdefault(name, set()).add((at.lineno, at.end_lineno or at.lineno))

    nodes = (
        list(own_nodes(node))
        if isinstance(node, DefNode | ast.ClassDef | ast.Module)
        else list(ast.walk(node))
    )
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    guarded = _guarded(node) if called else set()
    for n in nodes:
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
            if stdlib and _dunder(n.attr) and _root(n.value) in stdlib:
                continue
            if n.attr == "__dict__":
                add("*", n)
            elif id(n) in called and id(n) not in guarded:
                add(f"{n.attr}()", n)
            else:
                add(n.attr, n)
        elif isinstance(n, ast.Call):
            name = _last_name(n.func)
            for patched in _patched(n, name):
                add(patched, n)
            if name in ("getattr", "hasattr", "setattr", "delattr", "object") and len(n.args) >= 2:
                key = n.args[1]
                text = key.value if isinstance(key, ast.Constant) else None
                text = text if isinstance(text, str) else None
                introspects = name in ("getattr", "hasattr") and text and _dunder(text)
                if not (introspects and _root(n.args[0]) in stdlib):
                    add(text if text is not None else "*", n)
            elif name in _OPEN_READS:
                add("*", n)
            if name in _DOC_READS or name == "pydoc":
                add("__doc__", n)
            if name in _SIGNATURE_READS:
                add("__signature__", n)
    return {name: frozenset(found) for name, found in spans.items()}


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


def _attributes_read(node: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
            out.add(_attribute_key(n))
        elif (
            isinstance(n, ast.Call)
            and _last_name(n.func) in ("hasattr", "getattr")
            and len(n.args) >= 2
            and isinstance(n.args[1], ast.Constant)
            and isinstance(n.args[1].value, str)
        ):
            out.add(f"{ast.dump(n.args[0])}.{n.args[1].value}")
    return out


def keeps_lazy_attribute(fn: FunctionNode) -> bool:
    """Serves a value it keeps on an object: it tests an attribute (``if x._t is not None``,
    ``hasattr``, a ``try`` around the return), stores it and returns it. A later call finds it
    set and returns it without running what computed it."""
    stored: set[str] = set()
    tested: set[str] = set()
    returned: set[str] = set()
    for n in own_nodes(fn):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            stored.add(_attribute_key(n))
        elif isinstance(n, ast.If | ast.IfExp | ast.While):
            tested |= _attributes_read(n.test)
        elif isinstance(n, ast.Try):
            tested |= {a for s in n.body if isinstance(s, ast.Return) for a in _attributes_read(s)}
        elif isinstance(n, ast.Return) and n.value is not None:
            returned |= _attributes_read(n.value)
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


def has_dynamic_dispatch(fn: FunctionNode) -> bool:
    return any(isinstance(n, ast.Call) and _is_dynamic_call(n) for n in own_nodes(fn))


def _docstring(body: list[ast.stmt]) -> str | None:
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
        _last_name(test) == "TYPE_CHECKING" if isinstance(test, ast.Name | ast.Attribute) else False
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
    start, end = _span(stmt)
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
    start, end = _span(stmt)
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
        decorators = tuple(_last_name(d) for d in stmt.decorator_list)
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


def _span(node: ast.stmt) -> tuple[int, int]:
    start = node.lineno
    if isinstance(node, DefNode) and node.decorator_list:
        start = min(start, *(d.lineno for d in node.decorator_list))
    return start, node.end_lineno or node.lineno


def _body_start(node: FunctionNode) -> int:
    body = node.body
    first = body[0]
    if _docstring(body) is not None and len(body) > 1:
        first = body[1]
    return first.lineno if first.lineno > node.lineno else node.lineno


class _Collector:
    def __init__(self, path: str, lines: int, source_lines: list[str], facts: ModuleFacts) -> None:
        self.path = path
        self.lines = source_lines
        self.facts = facts
        self.regions: dict[str, Region] = {}
        self.owners: list[str] = [node_id(path, MODULE_SCOPE)] * lines
        self.seen: dict[str, int] = {}

    def paint(self, start: int, end: int, rid: str) -> None:
        for line in range(max(start, 1), min(end, len(self.owners)) + 1):
            self.owners[line - 1] = rid

    def unique(self, qualname: str, node: DefNode) -> str:
        for deco in node.decorator_list:
            if (
                isinstance(deco, ast.Attribute)
                and deco.attr in ("setter", "getter", "deleter")
                and isinstance(deco.value, ast.Name)
                and deco.value.id == node.name
            ):
                qualname = f"{qualname}.{deco.attr}"
        count = self.seen.get(qualname, 0) + 1
        self.seen[qualname] = count
        return qualname if count == 1 else f"{qualname}#{count}"

    def walk(self, stmts: list[ast.stmt], prefix: str, parent: str, in_function: bool) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                self.function(stmt, prefix, parent)
            elif isinstance(stmt, ast.ClassDef):
                self.klass(stmt, prefix, parent)
            else:
                for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                    for child in getattr(stmt, field, None) or ():
                        body = (
                            child.body
                            if isinstance(child, ast.ExceptHandler | ast.match_case)
                            else [child]
                        )
                        self.walk(body, prefix, parent, in_function)

    def _add(
        self,
        rid: str,
        qualname: str,
        kind: RegionKind,
        node: FunctionNode | ast.ClassDef,
        span: tuple[int, int],
        parent: str,
    ) -> None:
        """The region of a def or a class, over the lines ``span``."""
        start, end = span
        self.regions[rid] = Region(
            id=rid,
            qualname=qualname,
            name=node.name,
            kind=kind,
            start=start,
            end=end,
            def_line=node.lineno,
            decorators=tuple(_last_name(d) for d in node.decorator_list),
            parent=parent,
            text="".join(self.lines[start - 1 : end]),
            node=node,
            module=self.facts,
        )

    def function(self, node: FunctionNode, prefix: str, parent: str) -> None:
        qualname = self.unique(prefix + node.name, node)
        rid = node_id(self.path, qualname)
        start, end = _span(node)
        body_start = _body_start(node)
        self._add(rid, qualname, RegionKind.FUNCTION, node, (start, end), parent)
        self.paint(body_start, end, rid)
        self.walk(node.body, f"{qualname}.<locals>.", rid, in_function=True)

    def klass(self, node: ast.ClassDef, prefix: str, parent: str) -> None:
        qualname = self.unique(prefix + node.name, node)
        rid = node_id(self.path, f"{qualname}.{CLASS_BODY}")
        start, end = _span(node)
        self._add(
            rid, f"{qualname}.{CLASS_BODY}", RegionKind.CLASS_BODY, node, (start, end), parent
        )
        self.paint(start, end, rid)
        self.walk(node.body, f"{qualname}.", rid, in_function=False)


def extract_regions(path: str, source: str, tree: ast.Module | None = None) -> ModuleRegions:
    """Regions of ``source`` (raises ``SyntaxError``/``ValueError`` on unparsable code)."""
    tree = tree if tree is not None else ast.parse(source, filename=path)
    source_lines = source.splitlines(keepends=True)
    lines = source.count("\n") + 1
    facts = ModuleFacts(path, tree)
    collector = _Collector(path, lines, source_lines, facts)
    module_id = node_id(path, MODULE_SCOPE)
    collector.regions[module_id] = Region(
        id=module_id,
        qualname=MODULE_SCOPE,
        name=MODULE_SCOPE,
        kind=RegionKind.MODULE,
        start=1,
        end=lines,
        def_line=1,
        text=source,
        node=tree,
        module=facts,
    )
    collector.walk(tree.body, "", module_id, in_function=False)
    return ModuleRegions(path=path, regions=collector.regions, owners=tuple(collector.owners))

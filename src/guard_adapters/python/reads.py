"""Attribute reads of a function's code: the names it reads on objects (``x.name``,
``getattr(x, "name")``), each with the lines that read it, and reads by computed names
(``vars``, ``dir``, ``__dict__``, ``getattr`` with a variable) as ``*``; dynamic dispatch."""

from __future__ import annotations

import ast
import functools
import string
import sys

from guard_adapters.python.syntax import DefNode, FunctionNode, last_name, own_nodes
from guard_core.index_model import ANY_IMPORT, COMPUTED, IMPORTED, INTROSPECTED, THROUGH_CLASS

_DYNAMIC_BUILTINS = frozenset({"eval", "exec", "__import__", "globals", "locals", "vars"})


_DYNAMIC_ATTR_CALLS = frozenset({"getattr", "setattr", "delattr"})


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
    def _bindings(self) -> tuple[dict[str, str], dict[str, set[str]], set[str]] | None:
        """How the module binds names: ``import M`` of a standard-library module (bound name
        -> M's top package), ``from M import X`` (X -> the modules), every other binding
        (assignment, argument, definition...); None when a star import from outside the
        standard library may bind any name."""
        imported: dict[str, str] = {}
        from_imports: dict[str, set[str]] = {}
        other: set[str] = set()
        for n in ast.walk(self.tree):
            if _foreign_star(n):
                return None
            if isinstance(n, ast.Import):
                for alias in n.names:
                    bound = alias.asname or alias.name.partition(".")[0]
                    top = alias.name.partition(".")[0]
                    if top in sys.stdlib_module_names and top not in _PATCHED_MODULES:
                        imported.setdefault(bound, top)
                        if imported[bound] != top:
                            other.add(bound)
                    else:
                        other.add(bound)
            elif isinstance(n, ast.ImportFrom):
                for alias in n.names:
                    source = "." if n.level else (n.module or "")
                    from_imports.setdefault(alias.asname or alias.name, set()).add(
                        source if alias.asname in (None, alias.name) else f"{source} as"
                    )
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
        return imported, from_imports, other

    @functools.cached_property
    def stdlib_names(self) -> frozenset[str]:
        """Names the module binds only by ``import M`` of a standard-library module, and binds
        nowhere else (no assignment, argument, other import...): introspecting an object read
        through one (``tokenize._compile.__wrapped__``) introspects a standard-library object.
        Not ``sys`` and ``builtins`` (``sys.stdout`` is often a repository object), not in a
        module with a star import from elsewhere, and not a package of the repository named
        like a standard-library module (this file's own top folders)."""
        if self._bindings is None:
            return frozenset()
        imported, from_imports, other = self._bindings
        parts = self.path.replace("\\", "/").split("/")
        own = {part.removesuffix(".py") for part in parts[:-1]} | {parts[-1].removesuffix(".py")}
        return frozenset(imported.keys() - other - from_imports.keys() - own)

    @functools.cached_property
    def recorded_calls(self) -> frozenset[str]:
        """The spellings of the reflective calls whose arguments a measured run records
        (``getattr``, ``inspect.signature``...; see ``pytest/reflection.py``), as this module
        writes them: a builtin the module never rebinds, a function of ``inspect`` or
        ``typing`` called through the module or imported from it under its own name."""
        if self._bindings is None:
            return frozenset()
        imported, from_imports, other = self._bindings
        out = {name for name in RECORDED_BUILTINS if name not in other | from_imports.keys()}
        for module, names in RECORDED_FUNCTIONS.items():
            for name in names:
                if name not in other and from_imports.get(name) == {module}:
                    out.add(name)
            out.update(
                f"{bound}.{name}"
                for bound in self.stdlib_names
                if imported.get(bound) == module
                for name in names
            )
        return frozenset(out)

    @functools.cached_property
    def _class_methods(self) -> dict[int, frozenset[str]]:
        """Each method (by node id) -> the names its class body defines with ``def``."""
        out: dict[int, frozenset[str]] = {}
        for cls in ast.walk(self.tree):
            if isinstance(cls, ast.ClassDef):
                defs = [
                    d for d in cls.body if isinstance(d, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
                names = frozenset(d.name for d in defs)
                # a static method's first argument is no instance of the class
                out.update((id(d), names) for d in defs if not _static(d))
        return out

    def own_methods(self, node: ast.AST | None) -> frozenset[str]:
        """What ``self.NAME(...)`` calls in the method ``node``: a method its own class body
        defines (jinja's ``CodeGenerator.signature``, no ``inspect.signature``)."""
        return self._class_methods.get(id(node), frozenset())


RECORDED_BUILTINS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
"""Builtins whose attribute names a measured run records per test and line."""

RECORDED_FUNCTIONS = {
    "inspect": frozenset({"signature", "getfullargspec", "getcallargs"}),
    "typing": frozenset({"get_type_hints"}),
    "importlib": frozenset({"import_module"}),
}
"""Introspection functions whose objects (modules imported) a measured run records per test
and line."""


def _spelling(func: ast.expr) -> str:
    """``getattr`` for ``getattr(...)``, ``inspect.signature`` for ``inspect.signature(...)``."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return ""


def _is_dynamic_call(call: ast.Call) -> bool:
    name = last_name(call.func) if isinstance(call.func, ast.Name | ast.Attribute) else ""
    if isinstance(call.func, ast.Name) and name in _DYNAMIC_BUILTINS:
        return True
    if name in _DYNAMIC_ATTR_CALLS and isinstance(call.func, ast.Name):
        return len(call.args) < 2 or not isinstance(call.args[1], ast.Constant)
    if name == "import_module":
        return True
    # handlers[name](**kwargs), getattr(obj, name)(**kwargs)
    has_star_kwargs = any(k.arg is None for k in call.keywords)
    return has_star_kwargs and isinstance(call.func, ast.Subscript | ast.Call)


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
    if isinstance(node, DefNode) and any(last_name(d) == "xfail" for d in node.decorator_list):
        return {id(n) for n in ast.walk(node)}  # expected to fail: any call may, on purpose
    for n in own_nodes(node) if isinstance(node, DefNode | ast.ClassDef | ast.Module) else ():
        tried = isinstance(n, ast.Try | getattr(ast, "TryStar", ast.Try)) and bool(n.handlers)
        expects = isinstance(n, ast.With | ast.AsyncWith) and any(
            isinstance(i.context_expr, ast.Call) and last_name(i.context_expr.func) in _RAISES
            for i in n.items
        )
        for stmt in n.body if tried or expects else ():  # type: ignore[attr-defined]
            out.update(id(m) for m in ast.walk(stmt))
    return out


def _header(node: ast.AST) -> set[int]:
    """Nodes of a definition that run in the enclosing scope (decorators, defaults,
    annotations, bases): a call there is recorded against the enclosing code's lines."""
    parts: list[ast.AST | None]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        args = node.args
        parts = [
            *node.decorator_list,
            *args.defaults,
            *args.kw_defaults,
            node.returns,
            *(a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)),
            *(a.annotation for a in (args.vararg, args.kwarg) if a is not None),
        ]
    elif isinstance(node, ast.ClassDef):
        parts = [*node.decorator_list, *node.bases, *node.keywords]
    else:
        return set()
    return {id(n) for part in parts if part is not None for n in ast.walk(part)}


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


def attribute_reads(
    node: ast.AST, stdlib: frozenset[str] = frozenset(), recorded: frozenset[str] = frozenset()
) -> frozenset[str]:
    """The attribute names of :func:`attribute_read_spans`."""
    return frozenset(attribute_read_spans(node, stdlib, recorded))


def attribute_read_spans(
    node: ast.AST,
    stdlib: frozenset[str] = frozenset(),
    recorded: frozenset[str] = frozenset(),
    own: frozenset[str] = frozenset(),
) -> dict[str, frozenset[Span]]:
    """``name`` for an attribute read as a value, ``name()`` for one only called
    (``x.name(...)``): a call that reaches a repository method runs its body, so its evidence
    shows it. A call that may fail on purpose (under ``try`` or ``pytest.raises``) counts as
    a value read. A dunder read through ``stdlib``, names bound only to standard-library
    modules (``tokenize._compile.__wrapped__``), introspects no repository function: it is
    not one. A call in ``recorded`` (:attr:`ModuleFacts.recorded_calls`), whose arguments a
    measured run records, reads :data:`COMPUTED` for a computed name and :data:`INTROSPECTED`
    for a signature. ``self.NAME(...)`` in a method whose class defines ``NAME`` (``own``) calls
    that method: no signature or docstring introspection, whatever its name (``signature``);
    what it is given is still read (a patch target, a getattr name).
    Each name comes with the line spans of the expressions that read it."""
    spans: dict[str, set[Span]] = {}

    def add(name: str, at: ast.expr) -> None:
        spans.setdefault(name, set()).add((at.lineno, at.end_lineno or at.lineno))

    nodes = (
        list(own_nodes(node))
        if isinstance(node, DefNode | ast.ClassDef | ast.Module)
        else list(ast.walk(node))
    )
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    discarded = {id(n.value) for n in nodes if isinstance(n, ast.Expr)}
    guarded = _guarded(node) if called else set()
    recorded = recorded if recorded and called else frozenset()
    elsewhere = _header(node) if recorded else set()
    args = getattr(node, "args", None)
    first = args.args[0].arg if isinstance(args, ast.arguments) and args.args else None
    receiver = first if own else None
    a_class = first if _takes_a_class(node) else None
    for n in nodes:
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
            if stdlib and _dunder(n.attr) and _root(n.value) in stdlib:
                continue
            if _of_a_class(n.value, a_class):
                add(f"{n.attr}{THROUGH_CLASS}", n)
            if n.attr == "__dict__":
                add("*", n)
            elif id(n) in called and id(n) not in guarded:
                add(f"{n.attr}()", n)
            else:
                add(n.attr, n)
        elif isinstance(n, ast.Call):
            name = last_name(n.func)
            for patched in _patched(n, name):
                add(patched, n)
            for by_text in _named_in_strings(n, name):  # attrgetter("a.b"), "{0.a}".format
                add(by_text, n)
            if name in ("getattr", "hasattr", "setattr", "delattr", "object") and len(n.args) >= 2:
                key = n.args[1]
                text = key.value if isinstance(key, ast.Constant) else None
                text = text if isinstance(text, str) else None
                introspects = name in ("getattr", "hasattr") and text and _dunder(text)
                if text is None:
                    here = _spelling(n.func) in recorded and id(n) not in elsewhere
                    add(COMPUTED if here else "*", n)
                elif not (introspects and _root(n.args[0]) in stdlib):
                    add(text, n)
            elif name in _OPEN_READS:
                add("*", n)
            # a module imported by a computed name is held by the call's value (none when
            # it is discarded: ``__import__(name)`` then ``sys.modules[name]``)
            if (
                name in ("import_module", "__import__")
                and literal_module(n) is None
                and id(n) not in discarded
            ):
                here = _spelling(n.func) in recorded and id(n) not in elsewhere
                add(IMPORTED if here else ANY_IMPORT, n)
            if _calls_own(n, receiver, own):  # its own ``signature``: no introspection
                continue
            if name in _DOC_READS or name == "pydoc":
                add("__doc__", n)
            if name in _SIGNATURE_READS:
                here = _spelling(n.func) in recorded and id(n) not in elsewhere
                add(INTROSPECTED if here else "__signature__", n)
    return {name: frozenset(found) for name, found in spans.items()}


def literal_module(call: ast.Call) -> str | None:
    """The absolute module an import call names in a literal (``__import__("a.b")``,
    ``import_module("a.b")``), with no relative ``level`` or ``package``."""
    first = call.args[0] if call.args else None
    text = first.value if isinstance(first, ast.Constant) else None
    if not isinstance(text, str) or not text or text.startswith("."):
        return None
    level = call.args[4] if len(call.args) > 4 else None
    level = next((k.value for k in call.keywords if k.arg == "level"), level)
    if level is not None and not (isinstance(level, ast.Constant) and level.value == 0):
        return None
    return text


def _named_in_strings(call: ast.Call, name: str) -> set[str]:
    """Attributes a call reads by names written in string literals: ``attrgetter("a.b")``,
    ``methodcaller("m")``, and the fields of a literal format string (``"{0.a}".format``)."""
    texts = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if name in ("attrgetter", "methodcaller"):
        return {part for text in texts[: 1 if name == "methodcaller" else None]
                for part in text.split(".") if part}  # fmt: skip
    func = call.func
    if name in ("format", "format_map") and isinstance(func, ast.Attribute):
        template = func.value
        if isinstance(template, ast.Constant) and isinstance(template.value, str):
            return _format_fields(template.value)
    return set()


def _format_fields(template: str) -> set[str]:
    """The attribute names a format string's fields read (``{0.a.b}``, ``{x.a[0]}``, and
    the fields nested in a format spec)."""
    out: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        return out
    for _, field, spec, _ in parsed:
        for part in (field or "").replace("[", ".[").split(".")[1:]:
            if part and not part.startswith("["):
                out.add(part)
        if spec and "{" in spec:
            out |= _format_fields(spec)
    return out


def _takes_a_class(node: ast.AST) -> bool:
    """A classmethod (or one Python makes so): its first argument is a class."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    implicit = node.name in ("__new__", "__init_subclass__", "__class_getitem__")
    return implicit or any(last_name(d) == "classmethod" for d in node.decorator_list)


def _of_a_class(value: ast.expr, a_class: str | None) -> bool:
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return value.func.id == "type" and len(value.args) == 1
    if isinstance(value, ast.Attribute):
        return value.attr == "__class__"
    return isinstance(value, ast.Name) and value.id == a_class


def _static(fn: FunctionNode) -> bool:
    return any(last_name(d) == "staticmethod" for d in fn.decorator_list)


def _calls_own(call: ast.Call, receiver: str | None, own: frozenset[str]) -> bool:
    func = call.func
    return (
        receiver is not None
        and isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == receiver
        and func.attr in own
    )


def has_dynamic_dispatch(fn: FunctionNode) -> bool:
    return any(isinstance(n, ast.Call) and _is_dynamic_call(n) for n in own_nodes(fn))


Span = tuple[int, int]  # first and last line of the expression that makes a read

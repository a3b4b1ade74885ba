"""Name scopes of a module, and the qualified names a read resolves to.

The semantics are libcst's ``ScopeProvider`` (which Guard's index used until its metadata
passes became most of an ingest), rebuilt over the stdlib ``ast`` so a graph indexed by either
holds the same facts:

- a scope keeps *every* assignment of a name, in order (``index``); a bare name read resolves
  to the assignments of its scope made before it, else to all the enclosing scope's (a read
  from an inner scope sees all of them: a function runs after its module is done);
- an attribute chain ``a.b.c`` read resolves by its longest dotted prefix the scope binds
  (``import a.b`` binds ``a.b`` and ``a``), to all of that prefix's assignments;
- a class scope is invisible to the scopes inside it; ``global``/``nonlocal`` move a name's
  assignments to the scope they name;
- a qualified name is ``LOCAL`` (``Cls.meth``, ``f.<locals>.x``, ``<comprehension>.i``),
  ``IMPORT`` (the imported dotted name, leading dots kept) or ``BUILTIN``.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator

LOCAL, IMPORT, BUILTIN = "local", "import", "builtin"

QualifiedName = tuple[str, str]  # (name, source)


class Assignment:
    __slots__ = ("index", "name", "scope")

    def __init__(self, name: str, scope: Scope, index: int) -> None:
        self.name = name
        self.scope = scope
        self.index = index

    def qualified(self, full_name: str) -> set[QualifiedName]:
        prefix = self.scope.prefix
        return {(f"{prefix}.{full_name}" if prefix else full_name, LOCAL)}


class BuiltinAssignment(Assignment):
    __slots__ = ()

    def qualified(self, full_name: str) -> set[QualifiedName]:
        return {(f"builtins.{self.name}", BUILTIN)}


class ImportAssignment(Assignment):
    """A name an import statement binds; it answers for every alias of that statement."""

    __slots__ = ("aliases", "module")

    def __init__(
        self,
        name: str,
        scope: Scope,
        index: int,
        module: str,
        aliases: tuple[tuple[str, str | None], ...],
    ) -> None:
        super().__init__(name, scope, index)
        self.module = module  # "" for ``import``; ``..pkg`` for ``from ..pkg import``
        self.aliases = aliases  # (dotted name, as-name or None)

    def qualified(self, full_name: str) -> set[QualifiedName]:
        module = self.module
        found: set[QualifiedName] = set()
        for dotted, asname in self.aliases:
            parts = dotted.split(".")
            for i in range(len(parts), 0, -1):
                real = ".".join(parts[:i])
                bound = asname if asname is not None else real
                if module.endswith("."):
                    real = f"{module}{real}"
                elif module:
                    real = f"{module}.{real}"
                if full_name.startswith(bound):
                    rest = full_name.split(bound, 1)[1]
                    if rest and not rest.startswith("."):
                        continue
                    rest = rest.lstrip(".")
                    found.add((f"{real}.{rest}" if rest else real, IMPORT))
                    break
        return found


class Scope:
    """One of ``builtin``, ``global``, ``function``, ``class``, ``comprehension`` or
    ``annotation`` (PEP 695's, transparent to names)."""

    __slots__ = ("assignments", "count", "globals", "kind", "overwrites", "parent", "prefix")

    prefix: str
    globals: Scope

    def __init__(self, kind: str, parent: Scope | None, name: str | None = None) -> None:
        self.kind = kind
        self.parent: Scope = parent if parent is not None else self
        self.assignments: dict[str, list[Assignment]] = {}
        self.count = 0  # assignment statements left so far: orders reads against them
        self.overwrites: dict[str, Scope] = {}
        if kind == "global":
            self.globals = self
            self.parent = Scope("builtin", None)
            self.parent.globals = self
        elif parent is not None:
            self.globals = parent.globals
        up = self.parent.prefix if kind not in ("global", "builtin") else ""
        if kind == "function":
            self.prefix = ".".join(filter(None, (up, name, "<locals>")))
        elif kind == "class":
            self.prefix = ".".join(filter(None, (up, name)))
        elif kind == "comprehension":
            self.prefix = ".".join(filter(None, (up, "<comprehension>")))
        else:
            self.prefix = up

    def _visible_from(self, reader: Scope) -> bool:
        if self.kind == "class":
            return reader.parent is self and reader.kind == "annotation"
        return True

    def _visible_parent(self, reader: Scope, first: Scope | None = None) -> Scope:
        parent = first if first is not None else self.parent
        while not parent._visible_from(reader):
            parent = parent.parent
        return parent

    def binds(self, name: str) -> bool:
        """Whether ``name`` is bound here or in a scope this one sees."""
        if self.kind == "builtin":
            return hasattr(builtins, name)
        if name in self.overwrites:
            return self.overwrites[name].binds(name)
        if name in self.assignments:
            return True
        return self._visible_parent(self).binds(name)

    def resolve(self, name: str, reader: Scope) -> list[Assignment]:
        """Every assignment of ``name`` that ``reader`` (this scope or one inside it) sees."""
        if self.kind == "builtin":
            if name not in self.assignments:
                if not hasattr(builtins, name):
                    return []
                self.assignments[name] = [BuiltinAssignment(name, self, -1)]
            return self.assignments[name]
        if name in self.overwrites:
            return self._visible_parent(reader, self.overwrites[name]).resolve(name, reader)
        if name in self.assignments:
            return self.assignments[name]
        return self._visible_parent(reader).resolve(name, reader)

    def _target(self, name: str) -> Scope:
        if name in self.overwrites:
            return self._visible_parent(self, self.overwrites[name])._target(name)
        return self

    def assign(self, name: str) -> None:
        target = self._target(name)
        target.assignments.setdefault(name, []).append(Assignment(name, target, target.count))

    def assign_import(
        self, name: str, module: str, aliases: tuple[tuple[str, str | None], ...]
    ) -> None:
        target = self._target(name)
        binding = ImportAssignment(name, target, target.count, module, aliases)
        target.assignments.setdefault(name, []).append(binding)

    def declare(self, name: str, nonlocal_: bool) -> None:
        if self.kind != "global":
            self.overwrites[name] = self.parent if nonlocal_ else self.globals


class Access:
    """A bare name read (or the dotted prefix of its chain an import binds)."""

    __slots__ = ("index", "referents", "scope")

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.index = scope.count
        self.referents: list[Assignment] = []

    def resolve(self, name: str) -> None:
        found = self.scope.resolve(name, self.scope)
        earlier = [a for a in found if a.scope is not self.scope or a.index < self.index]
        if not earlier and found and self.scope.parent is not self.scope:
            earlier = self.scope.parent.resolve(name, self.scope)
        self.referents = earlier


class Pseudo:
    """A name the syntax tree keeps as a string (a pattern's capture, a keyword argument, a
    ``global`` name), with the lines it sits on."""

    __slots__ = ("end_lineno", "id", "lineno")

    def __init__(self, name: str, lineno: int, end_lineno: int | None = None) -> None:
        self.id = name
        self.lineno = lineno
        self.end_lineno = end_lineno if end_lineno is not None else lineno


def name_of(node: object) -> str | None:
    """The name a node is: a name, a pseudo-name, or ``None``/``True``/``False`` (names, to
    the scopes: builtins a star import may shadow)."""
    if isinstance(node, ast.Name | Pseudo):
        return node.id
    if isinstance(node, ast.Constant) and (node.value is None or type(node.value) is bool):
        return str(node.value)
    return None


def full_name(node: object) -> str | None:
    """``a.b.c`` for a chain; a call or subscript stands for what it is made from
    (``a.b().c`` is ``a.b.c``); a chain rooted elsewhere starts with ``None``."""
    name = name_of(node)
    if name is not None:
        return name
    if isinstance(node, ast.Attribute):
        return f"{full_name(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return full_name(node.func)
    if isinstance(node, ast.Subscript):
        return full_name(node.value)
    return None


def dotted_names(node: ast.expr) -> Iterator[tuple[str, ast.expr]]:
    """The dotted names of a chain, longest first, each with the node it ends at."""
    name = name_of(node)
    if name is not None:
        yield name, node
        return
    if not isinstance(node, ast.Attribute):
        return
    value = node.value
    if isinstance(value, ast.Call):
        if isinstance(value.func, ast.Attribute) or name_of(value.func) is not None:
            yield from dotted_names(value.func)
    elif isinstance(value, ast.Attribute) or name_of(value) is not None:
        names = dotted_names(value)
        first = next(names, None)
        if first is not None:
            yield f"{first[0]}.{node.attr}", node
            yield first
            yield from names


def qualified_names(
    scope: Scope, node: object, accesses: dict[int, list[Access]]
) -> set[QualifiedName]:
    """What ``node`` (read in ``scope``) names: through its access when it is one, else by
    its longest dotted prefix the scope binds."""
    reads = accesses.get(id(node))
    if reads:
        return {q for a in reads for r in a.referents for q in r.qualified(r.name)}
    full = full_name(node)
    if full is None:
        return set()
    found: list[Assignment] = []
    prefix: str | None = full
    while prefix:
        if scope.binds(prefix):
            found = scope.resolve(prefix, scope)
            break
        cut = prefix.rfind(".")
        prefix = None if cut == -1 else prefix[:cut]
    return {q for a in found for q in a.qualified(full)}


def resolve_relative(name: str, module: str | None, package: str | None) -> str | None:
    """A qualified name as a dotted module path: a relative import's leading dots climb from
    ``package``; a name inside a function (``<locals>``) is none."""
    if "<locals>" in name:
        return None
    if name.startswith("."):
        dots = len(name) - len(name.lstrip("."))
        base = (package or "").split(".") if package else []
        if dots > 1:
            base = base[: len(base) - (dots - 1)] if len(base) >= dots - 1 else []
        rest = name.lstrip(".")
        return ".".join([*base, rest] if rest else base) or None
    return name

"""Compare the regions of two versions of one module into changed regions."""

from __future__ import annotations

import ast
import builtins
import copy
import difflib
from collections.abc import Iterable

from guard_adapters.python.bases import STANDARD_BASES
from guard_adapters.python.hunks import function_hunks
from guard_adapters.python.purity import PURE_DECORATORS
from guard_adapters.python.regions import ModuleRegions, Region
from guard_adapters.python.statements import Statement, exports_unbound
from guard_adapters.python.syntax import own_nodes
from guard_core.model import CLASS_BODY, ChangedRegion, ChangeKind, RegionKind, split_id

_BUILTINS = frozenset(dir(builtins))
_PLAIN_BASES = STANDARD_BASES | {"str", "int", "float", "dict", "list", "tuple", "set"}


def _impure(decorators: Iterable[str], pure: frozenset[str] = frozenset()) -> bool:
    return any(d not in PURE_DECORATORS and d not in pure for d in decorators)


def _effects(s: Statement, pure: frozenset[str]) -> bool:
    """A statement's side effects, where a def's come from its decorators alone."""
    if (
        s.decorators
        and s.side_effects
        and not any(d not in PURE_DECORATORS for d in s.decorators if d not in pure)
    ):
        return False
    return s.side_effects


def _registering_bases(region: Region | None) -> bool:
    """A class whose bases or metaclass may run code when it is created (``__init_subclass__``,
    metaclass registries); exception types and the standard plain bases do not."""
    node = region.node if region is not None else None
    if not isinstance(node, ast.ClassDef):
        return False
    if node.keywords:
        return True
    for base in node.bases:
        target = base.value if isinstance(base, ast.Subscript) else base
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name not in _PLAIN_BASES and not name.endswith(("Error", "Exception", "Warning")):
            return True
    return False


def _dotted(module: str | None, qualname: str) -> str:
    qualname = qualname.removesuffix(f".{CLASS_BODY}")
    return f"{module}.{qualname}" if module else qualname


def _scope_prefix(module: str | None, region: Region) -> str:
    if region.kind is RegionKind.MODULE:
        return module or ""
    return _dotted(module, region.qualname)


def _changed_statements(
    old: tuple[Statement, ...], new: tuple[Statement, ...]
) -> tuple[list[Statement], list[Statement]]:
    matcher = difflib.SequenceMatcher(
        a=[s.dump for s in old], b=[s.dump for s in new], autojunk=False
    )
    gone: list[Statement] = []
    came: list[Statement] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            gone += old[i1:i2]
            came += new[j1:j2]
    return gone, came


def _exports_changed(
    gone: list[Statement], came: list[Statement], new: Region | None
) -> tuple[set[str], set[str], bool]:
    """Names a changed literal ``__all__`` adds, and those it drops (what a star import of the
    module now binds, or no longer binds), and whether the change is past following name by
    name: an ``__all__`` that appeared or went changes what every star import binds, and one
    that names what the module does not bind makes every star import of it fail."""
    before = [s.exports for s in gone if "__all__" in s.names]
    after = [s.exports for s in came if "__all__" in s.names]
    if not before and not after:
        return set(), set(), False
    if not before or not after or None in before or None in after:
        return set(), set(), True
    old = {n for e in before if e for n in e}
    now = {n for e in after if e for n in e}
    return now - old, old - now, new is None or exports_unbound(new)


def _body_change(
    old: Region | None,
    new: Region | None,
    module: str | None,
    rid: str,
    file: str,
    kind: ChangeKind,
    pure: frozenset[str] = frozenset(),
) -> ChangedRegion | None:
    """A module or class body: which top-level statements changed, what names they bind."""
    gone, came = _changed_statements(old.statements if old else (), new.statements if new else ())
    header_changed = (old.header if old else None) != (new.header if new else None)
    if not gone and not came and not header_changed:
        return None
    ref = new or old
    assert ref is not None
    prefix = _scope_prefix(module, ref)
    names = {f"{prefix}.{n}" if prefix else n for s in (*gone, *came) for n in s.names}
    effects = any(_effects(s, pure) for s in (*gone, *came))
    added, dropped, unknown = _exports_changed(gone, came, new)
    names |= {f"{prefix}.{n}" if prefix else n for n in added | dropped}
    effects |= unknown
    # another condition or caught type picks another branch: other names, or none
    effects |= sorted(s.guards for s in gone if s.guards) != sorted(
        s.guards for s in came if s.guards
    )
    imports_before = {m for s in gone for m in s.imports}
    imports_after = {m for s in came for m in s.imports}
    effects |= imports_before != imports_after  # importing another module runs its code
    if header_changed and ref.kind is RegionKind.CLASS_BODY:
        names.add(_dotted(module, ref.qualname))
        effects |= _impure((old.decorators if old else ()) + (new.decorators if new else ()), pure)
        effects |= _registering_bases(old) or _registering_bases(new)
    if ref.kind is RegionKind.MODULE:  # a new top-level name may shadow a builtin
        effects |= any(n in _BUILTINS for st in came for n in st.names)
    bound_after = {n for st in (new.statements if new else ()) for n in st.names}
    # a name __all__ no longer lists is gone for `from pkg import name` through `import *`
    unbound = {n for st in gone for n in st.names} - bound_after
    removed = sorted(f"{prefix}.{n}" if prefix else n for n in unbound | dropped)
    return ChangedRegion(
        id=rid,
        file=file,
        kind=kind,
        region=ref.kind,
        old_id=old.id if old and old.id != rid else None,
        body_changed=False,
        definition_changed=True,
        names=tuple(sorted(names)),
        side_effects=effects,
        removed=tuple(removed),
        registers=ref.kind is RegionKind.CLASS_BODY
        and _impure((old.decorators if old else ()) + (new.decorators if new else ()), pure),
    )


SIGNATURE_ATTRIBUTES = (
    "__signature__",
    "__defaults__",
    "__kwdefaults__",
    "__annotations__",
    "__code__",
    "__wrapped__",
)


DEFAULT_ATTRIBUTES = ("__signature__", "__defaults__", "__kwdefaults__")
"""What a changed default value changes of a function: not its code object (defaults are
evaluated where the ``def`` runs), its annotations or what it wraps."""


def _defaults_only(old: ast.AST | None, new: ast.AST | None) -> bool:
    """Whether the two definitions differ in their default values only."""
    if not isinstance(old, ast.FunctionDef | ast.AsyncFunctionDef) or type(old) is not type(new):
        return False
    assert isinstance(new, ast.FunctionDef | ast.AsyncFunctionDef)

    def without_defaults(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        args = copy.copy(fn.args)
        args.defaults = [ast.Constant(None) for _ in args.defaults]
        args.kw_defaults = [None if d is None else ast.Constant(None) for d in args.kw_defaults]
        header = (args, fn.returns, fn.decorator_list, getattr(fn, "type_params", None))
        return "|".join(ast.dump(x) if isinstance(x, ast.AST) else repr(x) for x in _flat(header))

    return without_defaults(old) == without_defaults(new)


def _flat(items: tuple[object, ...]) -> list[object]:
    return [y for x in items for y in (x if isinstance(x, list) else [x])]


def _params(args: ast.arguments) -> list[tuple[str, str]]:
    """(kind, name) of each parameter, in order."""
    out = [("posonly", a.arg) for a in args.posonlyargs] + [("pos", a.arg) for a in args.args]
    if args.vararg:
        out.append(("*", args.vararg.arg))
    out += [("kwonly", a.arg) for a in args.kwonlyargs]
    if args.kwarg:
        out.append(("**", args.kwarg.arg))
    return out


def _optional(args: ast.arguments) -> set[str]:
    positional = [*args.posonlyargs, *args.args]
    with_default = positional[len(positional) - len(args.defaults) :] if args.defaults else []
    kw = [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    star = [a for a in (args.vararg, args.kwarg) if a is not None]
    return {a.arg for a in (*with_default, *kw, *star)}


def _literal_defaults(old: ast.arguments, new: ast.arguments) -> bool:
    """Whether every default that changed or appeared is a literal."""
    before = {ast.dump(d) for d in [*old.defaults, *old.kw_defaults] if d is not None}
    for d in [*new.defaults, *new.kw_defaults]:
        if d is not None and ast.dump(d) not in before:
            try:
                ast.literal_eval(d)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                return False
    return True


def compatible_signature(old: ast.AST | None, new: ast.AST | None) -> bool:
    """Whether every call the old signature accepted binds the same way under the new one
    (only new optional parameters after the old ones, defaults or annotations changed): then
    only the calls that run the body can notice, and the code reading the signature."""
    if not isinstance(old, ast.FunctionDef | ast.AsyncFunctionDef) or type(old) is not type(new):
        return False
    assert isinstance(new, ast.FunctionDef | ast.AsyncFunctionDef)
    if old.name != new.name or [ast.dump(d) for d in old.decorator_list] != [
        ast.dump(d) for d in new.decorator_list
    ]:
        return False
    before, after = _params(old.args), _params(new.args)
    kept = [p for p in after if p in before]
    if kept != before:
        return False  # a parameter removed, renamed, moved or of another kind
    optional_before, optional_after = _optional(old.args), _optional(new.args)
    if not optional_before <= optional_after:
        return False  # a default removed: calls that omitted it now fail
    added = [p for p in after if p not in before]
    if any(name not in optional_after and kind != "kwonly" for kind, name in added):
        return False
    if any(kind == "kwonly" and name not in optional_after for kind, name in added):
        return False
    if not _literal_defaults(old.args, new.args):
        return False  # a default that is an expression runs at import: importers may fail
    positions = [i for i, p in enumerate(after) if p in added and p[0] in ("pos", "posonly")]
    last_old = max(
        (i for i, p in enumerate(after) if p in before and p[0] in ("pos", "posonly")), default=-1
    )
    return all(i > last_old for i in positions)  # a new positional before an old one shifts


_THROUGH = frozenset(
    {
        "staticmethod",
        "classmethod",
        "abstractmethod",
        "overload",
        "override",
        "final",
        "no_type_check",
    }
)
"""Decorators that leave a call of the function running its body."""


def _plain(region: Region) -> bool:
    """A ``def`` whose call runs its body (not a generator, whose call only makes one)."""
    node = region.node
    return isinstance(node, ast.FunctionDef) and not any(
        isinstance(n, ast.Yield | ast.YieldFrom) for n in own_nodes(node)
    )


def _decorator_dumps(region: Region) -> list[str]:
    return [ast.dump(d) for d in getattr(region.node, "decorator_list", ())]


def _function_change(
    old: Region | None,
    new: Region | None,
    module: str | None,
    rid: str,
    file: str,
    kind: ChangeKind,
    pure: frozenset[str] = frozenset(),
    through: frozenset[str] = frozenset(),
) -> ChangedRegion | None:
    body_changed = (old.body if old else None) != (new.body if new else None)
    definition_changed = (old.header, old.doc) != (new.header, new.doc) if old and new else True
    if not body_changed and not definition_changed:
        return None
    ref = new or old
    assert ref is not None
    decorators = (old.decorators if old else ()) + (new.decorators if new else ())
    header_moved = old is None or new is None or old.header != new.header
    name = _dotted(module, ref.qualname)
    names: tuple[str, ...] = (name,) if definition_changed else ()
    doc_only = definition_changed and not body_changed and not header_moved
    if doc_only and not _impure(decorators, pure):  # a registering decorator may copy it
        names = (f"{name}.__doc__",)  # read as f.__doc__, never by a call
    elif (
        definition_changed
        and not body_changed
        and old is not None
        and new is not None
        and old.doc == new.doc
        and compatible_signature(old.node, new.node)
        and not _impure(decorators, pure)
    ):
        changed = DEFAULT_ATTRIBUTES if _defaults_only(old.node, new.node) else SIGNATURE_ATTRIBUTES
        names = tuple(f"{name}.{a}" for a in changed)
    return ChangedRegion(
        id=rid,
        file=file,
        kind=kind,
        region=RegionKind.FUNCTION,
        old_id=old.id if old and old.id != rid else None,
        dynamic_dispatch=bool((new and new.dynamic_dispatch) or (old and old.dynamic_dispatch)),
        memo=bool((new and new.memo) or (old and old.memo)),
        body_changed=body_changed,
        definition_changed=definition_changed,
        names=names,
        docstring_only=doc_only and not _impure(decorators, pure),
        doc_changed=(old.doc if old else None) != (new.doc if new else None),
        # a registering decorator runs at import and may copy the docstring (``fn.__doc__``
        # into a table a help command prints): a changed docstring under one is import-time code
        side_effects=definition_changed and _impure(decorators, pure),
        rebinds=old is not None
        and new is not None
        and _decorator_dumps(old) != _decorator_dumps(new),
        was_property=old is not None and old.decorators == ("property",) and _plain(old),
        calls_through=old is not None
        and new is not None
        and _plain(old)
        and _plain(new)
        and all(d in _THROUGH or d in through for d in decorators),
        removed=(_dotted(module, ref.qualname),) if new is None else (),
        hunks=function_hunks(old, new) if old and new and not definition_changed else (),
    )


def _change(
    old: Region | None,
    new: Region | None,
    module: str | None,
    rid: str,
    file: str,
    kind: ChangeKind,
    pure: frozenset[str] = frozenset(),
    through: frozenset[str] = frozenset(),
) -> ChangedRegion | None:
    ref = new or old
    assert ref is not None
    if (
        old is not None
        and new is not None
        and old.text == new.text
        and ref.kind is not RegionKind.MODULE
    ):
        return None  # the same source: no need to normalise it
    if ref.kind is RegionKind.FUNCTION:
        return _function_change(old, new, module, rid, file, kind, pure, through)
    return _body_change(old, new, module, rid, file, kind, pure)


def compare_modules(
    old: ModuleRegions | None,
    new: ModuleRegions | None,
    module: str | None,
    pure: frozenset[str] = frozenset(),
    through: frozenset[str] = frozenset(),
) -> list[ChangedRegion]:
    """Changed regions between two versions of a module (either side may be absent).

    Regions are matched by qualname so a renamed file compares like an edited one; an id that
    vanished while one with the same kind and body appeared is reported as a rename.
    """
    old_by_q = {r.qualname: r for r in old.regions.values()} if old else {}
    new_by_q = {r.qualname: r for r in new.regions.values()} if new else {}
    path = new.path if new else old.path if old else ""
    out: list[ChangedRegion] = []
    for q in old_by_q.keys() & new_by_q.keys():
        o, n = old_by_q[q], new_by_q[q]
        kind = ChangeKind.RENAMED if o.id != n.id else ChangeKind.MODIFIED
        change = _change(o, n, module, n.id, path, kind, pure, through)
        if change is None and kind is ChangeKind.RENAMED and o.kind is RegionKind.MODULE:
            change = ChangedRegion(
                id=n.id,
                file=path,
                kind=kind,
                region=RegionKind.MODULE,
                old_id=o.id,
                body_changed=False,
                definition_changed=True,
                side_effects=True,
            )  # the module's import name changed
        if change is not None:
            out.append(change)
    added = {q: new_by_q[q] for q in new_by_q.keys() - old_by_q.keys()}
    for q in sorted(old_by_q.keys() - new_by_q.keys()):
        o = old_by_q[q]
        twin = next(
            (
                aq
                for aq, a in sorted(added.items())
                if a.kind is o.kind is RegionKind.FUNCTION
                and a.body == o.body
                and split_id(a.parent or "")[1] == split_id(o.parent or "")[1]
            ),
            None,
        )
        if twin is not None:
            a = added.pop(twin)
            out.append(
                ChangedRegion(
                    id=a.id,
                    file=path,
                    kind=ChangeKind.RENAMED,
                    region=a.kind,
                    old_id=o.id,
                    body_changed=False,
                    definition_changed=True,
                    names=(_dotted(module, o.qualname), _dotted(module, a.qualname)),
                    side_effects=_impure(o.decorators + a.decorators, pure),
                    removed=(_dotted(module, o.qualname),),
                )
            )
            continue
        change = _change(o, None, module, o.id, old.path if old else path, ChangeKind.DELETED, pure)
        if change is not None:
            out.append(change)
    for q in sorted(added):
        change = _change(None, added[q], module, added[q].id, path, ChangeKind.ADDED, pure)
        if change is not None:
            out.append(change)
    return sorted(out, key=lambda c: c.id)

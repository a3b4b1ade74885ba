"""Structural digests of what an import builds (standard library only: it runs inside the
target's interpreter, for ``loaded_state``).

A digest leaves out the code of repository functions (a changed line is seen by the tests
that run it), though not which of a file's same-named definitions a function is (the branches
of an ``if``), and keeps everything else an import builds: constants, defaults, closures, class
dictionaries, instances, registries, and what a C base keeps besides them. The same state gives
the same digest in any process (with one ``PYTHONHASHSEED``); what cannot be told apart gives a
digest that differs, or is reported unreadable, never one that hides a difference.
"""

from __future__ import annotations

import collections
import contextvars
import hashlib
import io
import os
import random
import sys
import threading
import types
import weakref
from collections.abc import Collection, Iterator
from typing import Any, cast

from guard_adapters.imports.c_fields import fields_in_c, slots_of
from guard_adapters.imports.definition_sites import DefinitionSites

try:
    from _abc import _get_dump as abc_dump
except ImportError:  # pragma: no cover - the pure-Python ``abc`` keeps its registry in dicts
    abc_dump = None

# caches whose entries are a pure function of their keys: their content changes no behaviour
PURE_CACHES = {
    ("re", "_cache"),
    ("re", "_cache2"),
    ("typing", "_caches"),
    ("typing", "_cleanups"),
    ("linecache", "cache"),
    ("fnmatch", "_compile_pattern"),
    ("encodings", "_cache"),
    ("warnings", "onceregistry"),
    ("sys", "modules"),  # compared by name, below
    ("sys", "path_importer_cache"),
    ("sys", "argv"),
    ("sys", "orig_argv"),
    ("logging", "_startTime"),  # a clock's reading: when ``logging`` was imported
}
# pytest's own session, reached from dependencies' globals (``MARK_GEN``, the assertion
# rewriter on ``sys.meta_path``): by what an import can change in it, not by what differs from
# one run to the next (addresses, times). Exact types, in dependencies' state only: a
# repository's own copy is compared whole
HARNESS = {
    "_pytest.config.Config": ("pluginmanager", "option", "_inicache"),
    "_pytest.main.Session": ("config", "testscollected", "testsfailed"),
    "_pytest.config.PytestPluginManager": ("_name2plugin",),
    # which test modules it rewrote depends on how they were loaded (the probe serves the
    # base's text past it): what an import asks of it is ``register_assert_rewrite``
    "_pytest.assertion.rewrite.AssertionRewritingHook": ("config", "fnpats", "_must_rewrite"),
}
# what a thread holds that differs from one run to the next (its ident, locks, stderr)
THREAD_RUN = {
    "_ident",
    "_native_id",
    "_tstate_lock",
    "_started",
    "_is_stopped",
    "_handle",
    "_stderr",
    "_invoke_excepthook",
}
# random values a dependency draws when it is imported (multiprocessing's authentication key)
DRAWN_AT_START = {"multiprocessing.process.AuthenticationString"}
THREAD_TABLES = {("threading", "_active"), ("threading", "_limbo")}  # keyed by thread idents
MODULE_DUNDERS = {
    "__builtins__",
    "__cached__",
    "__file__",
    "__loader__",
    "__spec__",
    "__path__",
    "__warningregistry__",
}
CLASS_SKIP = {"__dict__", "__weakref__", "_abc_impl"}
ATOMS = (type(None), bool, int, float, complex, str, bytes)
# C objects whose repr shows an address but whose state nothing reads as data
STATELESS = {"_thread.lock", "_thread.RLock", "_thread._local", "builtins.object"}
ATTRS_OF_OPAQUE = ("func", "args", "keywords", "pattern", "flags", "__wrapped__")


class Digest:
    """Structural digests: the same state gives the same digest in any process (with one
    ``PYTHONHASHSEED``); whatever cannot be told apart gives a digest that differs, never one
    that hides a difference."""

    def __init__(
        self, repo_modules: set[str], sources: dict[str, bytes] | None = None, root: str = ""
    ) -> None:
        self.repo_modules = repo_modules
        self.sites = DefinitionSites(sources or {}, root)
        self.done: dict[int, str] = {}
        self.keep: list[object] = []  # an id stays unique while its object is held
        self.unreadable: list[str] = []  # types of the objects that raised when read
        self.on_stack: dict[int, int] = {}  # being digested: id -> depth
        self.low: list[int] = []  # per depth, the lowest depth its object reached back to
        self.pending: list[tuple[int, int, str]] = []  # on a cycle, not settled yet
        self.generated: dict[str, bool] = {}
        self.strict = True  # the repository's state: what cannot be read is not compared

    def of(self, obj: object) -> str:
        """The object's digest. Objects on a cycle (a parent and the children that point
        back at it) are digested as one: each one's digest covers every member's state."""
        kind = type(obj)
        if kind in ATOMS:  # most of what is read: its value is its digest
            text = repr(obj)
            if len(text) < 64:
                return f"{kind.__name__}:{text}"
        key = id(obj)
        found = self.done.get(key)
        if found is not None:
            return found
        at = self.on_stack.get(key)
        if at is not None:  # back to an object still being digested
            self.low[-1] = min(self.low[-1], at)
            return f"back:{len(self.low) - at}"
        depth = len(self.low)
        self.on_stack[key] = depth
        self.low.append(depth)
        self.keep.append(obj)
        try:
            parts = [_name(kind), *self._parts(obj, kind)]
        except Exception:  # a proxy or descriptor that raises: its state is not known
            self.unreadable.append(_name(kind))
            parts = ["unreadable", _name(kind)]
        digest = _hash(parts)
        del self.on_stack[key]
        low = self.low.pop()
        if self.low:
            self.low[-1] = min(self.low[-1], low)
        if low < depth:  # on a cycle through an ancestor: settled when that one is
            self.pending.append((key, depth, digest))
            return digest
        members = [(k, d) for k, at_depth, d in self.pending if at_depth > depth]
        self.pending = [p for p in self.pending if p[1] <= depth]
        for member, provisional in members:
            self.done[member] = _hash([digest, provisional])
        self.done[key] = digest
        return digest

    def _parts(self, obj: Any, kind: type) -> Iterator[str]:
        """By the object's real type and its own storage, never through ``__getattr__`` or a
        ``__class__`` a proxy forwards."""
        if not self.strict and _name(kind) in DRAWN_AT_START:
            yield "drawn at start"
        elif issubclass(kind, ATOMS):
            yield repr(obj) if kind in ATOMS else _atom_repr(obj, kind)
            if kind not in ATOMS:  # an enum member, a str subclass: what it stores too
                yield from self._attrs(obj)
        elif issubclass(kind, types.ModuleType):
            yield obj.__name__
            if sys.modules.get(obj.__name__) is not obj:  # a namespace built, not imported
                yield from self._attrs(obj, skip=self._shared_with_original(obj))
        elif issubclass(kind, (tuple, list)):
            sequence: Any = tuple if issubclass(kind, tuple) else list
            yield from (self.of(x) for x in sequence.__iter__(obj))
            yield from self._attrs(obj)
        elif issubclass(kind, (set, frozenset)):
            members: Any = frozenset if issubclass(kind, frozenset) else set
            yield from sorted(self.of(x) for x in members.__iter__(obj))
            yield from self._attrs(obj)
        elif issubclass(kind, dict):  # in insertion order: iterating it shows that order
            yield from (self.of(k) + self.of(v) for k, v in list(dict.items(obj)))
            if issubclass(kind, collections.defaultdict):
                yield self.of(obj.default_factory)
            yield from self._attrs(obj)
        elif issubclass(kind, collections.deque):
            yield from (self.of(x) for x in list(collections.deque.__iter__(obj)))
            yield str(obj.maxlen)
            yield from self._attrs(obj)
        elif isinstance(obj, random.Random):  # a SystemRandom draws from the OS: no state
            yield "system" if isinstance(obj, random.SystemRandom) else self.of(obj.getstate())
            yield from self._attrs(obj)
        elif issubclass(kind, type):
            yield from self._class(obj)
        elif kind is types.FunctionType:
            yield from self._function(obj)
        elif kind is types.MethodType:
            yield self.of(obj.__func__)
            yield self.of(obj.__self__)
        elif kind in (types.BuiltinFunctionType, types.MethodWrapperType):
            yield getattr(obj, "__qualname__", "")
            owner = getattr(obj, "__self__", None)
            yield owner.__name__ if isinstance(owner, types.ModuleType) else self.of(owner)
        elif kind is types.CodeType:
            yield from self._code(obj)
        elif kind in (staticmethod, classmethod):
            yield self.of(obj.__func__)
        elif kind is property:
            yield from (self.of(f) for f in (obj.fget, obj.fset, obj.fdel, obj.__doc__))
        elif kind is types.CellType:
            try:
                yield self.of(obj.cell_contents)
            except ValueError:
                yield "empty"
        elif issubclass(kind, weakref.ref):
            yield self.of(weakref.ref.__call__(obj))
        else:
            yield from self._object(obj, kind)

    def _shared_with_original(self, copy: types.ModuleType) -> set[str]:
        """A dependency's copy of a loaded module (coverage.py isolates ``os`` and ``sys``)
        shares the original's values: one that is the original's very object is compared
        where the original's globals are, each by its name (a cache left out there, a value
        that varies from one import to the next told as such), not once more in the copy."""
        original = sys.modules.get(copy.__name__)
        if self.strict or original is None or original is copy:
            return set()
        theirs = vars(original)
        return {k for k, v in list(vars(copy).items()) if k in theirs and theirs[k] is v}

    def _attrs(self, obj: object, skip: Collection[str] = ()) -> Iterator[str]:
        own = _own(obj, "__dict__")
        if isinstance(own, dict):
            items = [(k, v) for k, v in list(dict.items(own)) if k not in skip]
            yield from sorted(f"{k}={self.of(v)}" for k, v in items)

    def _object(self, obj: object, kind: type) -> Iterator[str]:
        harness = None if self.strict else HARNESS.get(_name(kind))
        if harness is not None:
            yield from self._harness(obj, kind, harness)
            return
        yield self.of(kind)
        if issubclass(kind, threading.Thread):  # started or not, alive or not: no ident
            yield from self._attrs(obj, skip=THREAD_RUN)
            alive = threading.Thread.is_alive(cast(threading.Thread, obj))
            yield f"started={_own(obj, '_started').is_set()} alive={alive}"
        else:
            yield from self._attrs(obj)
        slots = slots_of(kind)
        for slot in slots:
            value = _own(obj, slot, _UNSET)
            yield f"{slot}={self.of(value)}" if value is not _UNSET else f"{slot} unset"
        for attr in ATTRS_OF_OPAQUE:  # partials, compiled patterns, C wrappers
            value = _own(obj, attr, _UNSET)
            if value is not _UNSET:
                yield f"{attr}={self.of(value)}"
        if issubclass(kind, (weakref.WeakSet, weakref.WeakValueDictionary)):
            yield from sorted(self.of(x) for x in list(obj))  # type: ignore[call-overload]
        yield from self._c_fields(obj, kind)
        if _own(obj, "__dict__") is None and not slots:
            yield self._opaque(obj, kind)

    def _c_fields(self, obj: object, kind: type) -> Iterator[str]:
        """What a base written in C keeps besides ``__dict__`` (an SSL context's settings, a
        socket's timeout): its fields that read as plain values (not one computed anew at
        each read, as ``Decimal.imag``); an in-memory file's content."""
        for field, descriptor in fields_in_c(kind):
            try:
                value = descriptor.__get__(obj, kind)
            except Exception as exc:  # a closed file's: the same on both sides of one state
                yield f"{field} raised {_kind(exc)}"
            else:
                if isinstance(value, ATOMS):
                    yield f"{field}={self.of(value)}"
        if isinstance(obj, (io.StringIO, io.BytesIO)):
            try:
                yield self.of(obj.getvalue())
            except ValueError:
                yield "closed"

    def _harness(self, obj: object, kind: type, attrs: tuple[str, ...]) -> Iterator[str]:
        yield _name(kind)
        for attr in attrs:
            value = _own(obj, attr)
            if attr == "_name2plugin":  # plug-ins by name (an address's by kind) and kind
                yield from sorted(
                    f"{'<address>' if name.isdigit() else name}="
                    + (self.of(plugin) if isinstance(plugin, types.ModuleType) else _kind(plugin))
                    for name, plugin in dict(value).items()
                )
            else:
                yield f"{attr}={self.of(value)}"

    def global_of(self, module: str, name: str, value: object) -> str:
        """A dependency's global; a table of threads by its threads (its keys are idents), a
        process id kept at import as such (by its name: a constant may equal the id)."""
        if (module, name) in THREAD_TABLES and isinstance(value, dict):
            return _hash(sorted(self.of(thread) for thread in list(value.values())))
        if type(value) is int and value == os.getpid() and "pid" in name.lower():
            return "this process's id"
        return self.of(value)

    def _opaque(self, obj: object, kind: type) -> str:
        """An object that keeps its state in C: its buffer (an array), else its repr; none
        that shows, in the repository's state (not a lock), cannot be read."""
        try:
            view = memoryview(obj)  # type: ignore[arg-type]
        except TypeError:
            pass
        else:
            data = hashlib.blake2b(view.tobytes(), digest_size=12).hexdigest()
            return f"{view.format} {view.shape} {data}"
        if kind in weakref.ProxyTypes:  # the object it points to is held, and read, elsewhere
            return f"weakproxy {_name(obj.__class__)}"
        if isinstance(obj, contextvars.ContextVar):  # its value is the context's, not state
            try:
                default = self.of(obj.get())
            except LookupError:
                default = "no default"
            return f"{obj.name} {default}"
        text = _safe_repr(obj)
        if " at 0x" not in text:
            return text
        if self.strict and _name(kind) not in STATELESS:
            raise TypeError(f"{_name(kind)} shows no state")
        return "opaque"

    def _class(self, cls: type) -> Iterator[str]:
        """A class held as a value (a class attribute, an annotation, an instance's type):
        a closed repository class (see :meth:`closed`) by its frame, the dunders Python reads
        of it implicitly (a method of them by its presence) and the values an import computed
        for it; its methods and plain constants are compared where it is bound (module state,
        ``C.attr``), read through their own names, or run. Any other class, whole."""
        yield self.frame(cls)
        if not self.closed(cls):
            yield from (f"{key}={value}" for key, value in self.members(cls))
            return
        for key, value in sorted(vars(cls).items()):
            if key in CLASS_SKIP:
                continue
            if _implicit(key):  # a method Python calls runs its code, which evidence shows
                yield f"{key}={'a method' if self._in_a_file(value) else self.of(value)}"
            elif not (self._in_a_file(value) or type(value) in ATOMS):
                # computed: read through a holder by a name no index sees (attrgetter)
                yield f"{key}={self.of(value)}"

    def _in_a_file(self, value: object) -> bool:
        """A method, class or static method, or property of the repository's code."""
        if isinstance(value, property):
            return all(f is None or self._in_a_file(f) for f in (value.fget, value.fset))
        fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
        return isinstance(fn, types.FunctionType) and not self._generated(fn.__code__.co_filename)

    def closed(self, cls: type) -> bool:
        """A repository class bound by its name at the top of its module (where its members
        are compared one by one) whose bases and metaclass are the repository's (or
        ``object``, ``type``): no outside code reads its members by names the index cannot
        see (a library's base or metaclass may)."""
        return (
            cls.__module__ in self.repo_modules
            and "." not in cls.__qualname__
            and all(b is object or b.__module__ in self.repo_modules for b in cls.__mro__[1:])
            and (type(cls) is type or type(cls).__module__ in self.repo_modules)
            and _bound_by_name(cls)
        )

    def whole(self, cls: type, members: list[tuple[str, str]]) -> str:
        """A class's digest where it is bound: frame and every member."""
        return _hash([self.frame(cls), *(f"{k}={d}" for k, d in members)])

    def members(self, cls: type) -> list[tuple[str, str]]:
        return [(k, self.of(v)) for k, v in sorted(vars(cls).items()) if k not in CLASS_SKIP]

    def frame(self, cls: type) -> str:
        """A class apart from its members: its name, bases and metaclass (by name: a base's
        members are told apart where they are defined), its subclasses and ABC registrations
        (found through the class though bound nowhere)."""
        parts = [_name(cls), *(_name(b) for b in cls.__bases__), _name(type(cls))]
        if cls.__module__ in self.repo_modules:
            subclasses: list[type] = type.__subclasses__(cls)
            parts += sorted(_name(sub) for sub in subclasses)
            # one bound by no name its members would be read through: built by a function,
            # by ``type()``
            parts += sorted(self.of(sub) for sub in subclasses if not _bound_by_name(sub))
        if abc_dump is not None and "_abc_impl" in vars(cls):
            registered = (ref() for ref in abc_dump(cls)[0])
            parts += sorted(_name(c) for c in registered if isinstance(c, type))
        return "|".join(parts)

    def _function(self, fn: types.FunctionType) -> Iterator[str]:
        yield f"{fn.__module__}.{fn.__qualname__}"
        code = fn.__code__
        qualname = getattr(code, "co_qualname", fn.__qualname__)
        yield f"{code.co_filename}:{qualname}"  # a wrapper's own, not what it copied (wraps)
        if self._generated(code.co_filename):  # dataclasses', namedtuple's: no file to read
            yield from self._code(code)
        elif self.sites.ambiguous(code, qualname):  # which of the same-named definitions
            yield self.of(code)
        yield self.of(fn.__defaults__)
        yield self.of(fn.__kwdefaults__)
        yield from self._closure(fn)
        yield self.of(fn.__doc__)
        yield self.of(fn.__dict__)
        yield self.of(getattr(fn, "__annotations__", None))

    def _closure(self, fn: types.FunctionType) -> Iterator[str]:
        """The cells a function closes over. The ``__class__`` cell of a method that calls
        ``super()`` holds its own class: a repository class bound by its name is told by
        that name, as bases are (its members are compared where it is bound, each by its
        own name), so a change to one method is not a change to every ``super()`` caller."""
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
            held = _own(cell, "cell_contents", _UNSET)
            if name == "__class__" and isinstance(held, type) and self._compared_apart(held):
                yield f"__class__={_name(held)}"
            else:
                yield self.of(cell)

    def _compared_apart(self, cls: type) -> bool:
        return cls.__module__ in self.repo_modules and _bound_by_name(cls)

    def _generated(self, filename: str) -> bool:
        """Code from no file on disk: what a file holds changes only with the file (a
        repository file's lines are seen by the tests that run them)."""
        found = self.generated.get(filename)
        if found is None:
            found = self.generated[filename] = not os.path.isfile(filename)
        return found

    def _code(self, code: types.CodeType) -> Iterator[str]:
        """What the code does, without its positions (file, lines)."""
        yield getattr(code, "co_qualname", code.co_name)
        yield code.co_code.hex()
        yield from (self.of(c) for c in code.co_consts)
        for names in (code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars):
            yield ",".join(names)
        counts = (code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount)
        yield f"{code.co_flags} {counts}"


_UNSET = object()
_OWN = __name__.partition(".")[0]  # the probe's own package: its state is the request's


def _own(obj: object, attr: str, default: Any = None) -> Any:
    """An attribute as the object itself stores it (no ``__getattr__``, no proxying)."""
    try:
        return object.__getattribute__(obj, attr)
    except Exception:
        return default


def _atom_repr(obj: Any, kind: type) -> str:
    """A subclass of a built-in value: its value as the built-in type shows it."""
    base: Any = next(b for b in kind.__mro__ if b in ATOMS)
    return str(base.__repr__(obj))


def _hash(parts: list[str]) -> str:
    h = hashlib.blake2b(digest_size=12)
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def _safe_repr(obj: object) -> str:
    try:
        return repr(obj)
    except Exception:
        return "opaque"


def _name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _kind(obj: object) -> str:
    return _name(type(obj))


# a class's bookkeeping, not behaviour: its docstring (read by name), its definition's lines
NOT_IMPLICIT = {"__doc__", "__module__", "__qualname__", "__firstlineno__", "__static_attributes__"}


def _implicit(key: str) -> bool:
    return key.startswith("__") and key.endswith("__") and key not in NOT_IMPLICIT


def _bound_by_name(cls: type) -> bool:
    """Whether the class is what its module and qualified name lead to."""
    found: Any = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        found = _own(found, "__dict__", {}).get(part) if found is not None else None
    return found is cls

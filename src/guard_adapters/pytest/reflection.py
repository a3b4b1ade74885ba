"""Recording what reflective calls in repository code were given, per context, file and line:
the attribute names of ``getattr``/``hasattr``/``setattr``/``delattr``, the objects whose
signature ``inspect.signature``, ``getfullargspec``, ``getcallargs`` and
``typing.get_type_hints`` read, and the modules ``importlib.import_module`` imported. A static
read by a computed name then reads, for one test, the names its run looked up there, not every
name (``guard_core/index_model.py``: ``COMPUTED``, ``INTROSPECTED``, ``IMPORTED``).
``builtins.__import__`` is not wrapped: ``import`` statements call it too, and code that tells
a missing module from a failing one by the traceback's depth (Flask's ``locate_app``) would see
the wrapper's frame.

The builtins and the module functions are replaced for the measured session; a repository
module that bound an introspection function before that (imported before the collector, or
through another module's name) is reported as unrecorded, and so is every file when anything
restored or replaced the wrappers.

A module outside the repository that calls a wrapped builtin gets the real builtins bound in
its own namespace at the next pause of the session (a test phase or a collected module ends:
no library is then iterating its namespace), so that its later calls skip the wrapper (pytest's
assertion rewriting alone makes a million ``getattr`` calls on a small suite; through a Python
wrapper, and the audit event of every frame look, they doubled the run). A repository module
that ends up with one of those names bound (``from lib import *``) is reported unrecorded. The
modules that own a wrapper watch their wrapped names: setting one, even a patch put back in
the same test phase, ends the record.
Standard library only: this runs in the target's interpreter."""

from __future__ import annotations

import builtins
import functools
import importlib
import inspect
import sys
import threading
import types
import typing
from collections.abc import Callable
from typing import Any

from guard_adapters.pytest.identity import address
from guard_adapters.pytest.labels import HasContext

BUILTINS = ("getattr", "hasattr", "setattr", "delattr")
INTROSPECTION = {
    inspect: ("signature", "getfullargspec", "getcallargs"),
    typing: ("get_type_hints",),
}
# functions that import a module by the name they are given: what they imported is recorded
IMPORTERS = {importlib: ("import_module",)}
UNNAMED = "=?"  # an object without a qualified name: it may be any
ANY_MODULE = "@*"  # an import whose module could not be named: it may be any
_PENDING = object()
_real_getattr = builtins.getattr
_real_setattr = builtins.setattr
_real_hasattr = builtins.hasattr
_REAL_BUILTINS = {name: _real_getattr(builtins, name) for name in BUILTINS}
_MAX_OBJECTS = 64  # what one introspected object leads to (wrapped, bases) is small


def object_names(obj: Any) -> set[str]:
    """``=QUALNAME`` of ``obj`` and of what its signature is read from: a bound method's
    function, a partial's function, the ``__wrapped__`` chain, a class's bases and metaclass,
    an instance's class."""
    out: set[str] = set()
    todo = [obj]
    seen: set[int] = set()
    while todo and len(seen) < _MAX_OBJECTS:
        item = todo.pop()
        if address(item) in seen:
            continue
        seen.add(address(item))
        try:
            if isinstance(item, functools.partial):
                todo.append(item.func)
                continue
            if isinstance(item, type):
                todo.extend(c for c in item.__mro__[1:] if c is not object)
                if type(item) is not type:
                    todo.append(type(item))
                # what serves a call of the class may be a function bound under another name
                todo.extend(
                    f
                    for f in (_real_getattr(item, n, None) for n in ("__init__", "__new__"))
                    if f is not None and _real_getattr(f, "__module__", None) != "builtins"
                )
            elif not callable(item) or not _real_hasattr(item, "__qualname__"):
                todo.append(type(item))  # a callable instance: its class's __call__
                continue
            for attr in ("__func__", "__wrapped__"):
                inner = _real_getattr(item, attr, None)
                if inner is not None:
                    todo.append(inner)
            name = _real_getattr(item, "__qualname__", None)
            out.add(f"={name}" if isinstance(name, str) and name else UNNAMED)
        except Exception:  # an object that raises on a look: it may be anything
            out.add(UNNAMED)
    if todo:
        out.add(UNNAMED)
    return out


class _WatchedModule(types.ModuleType):
    """The class a wrapper's module takes while the record runs: setting or deleting a
    wrapped name is told to the recorder."""

    def __setattr__(self, name: str, value: Any) -> None:
        _patched(self, name)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        _patched(self, name)
        super().__delattr__(name)


_watchers: list[Callable[[Any, str], None]] = []


def _patched(owner: Any, name: str) -> None:
    for watcher in _watchers:
        watcher(owner, name)


class ReflectionRecorder:
    """Wraps the reflective builtins and introspection functions while installed; what a
    call from a repository file was given is kept under the current context."""

    def __init__(self, relative: Callable[[str], str | None], holder: HasContext) -> None:
        self._relative = relative  # a code file -> its repository path, or None
        self._holder = holder
        self._files: dict[str, Any] = {}
        self.seen: dict[str, dict[str, dict[int, set[str]]]] = {}
        self._replaced: list[tuple[Any, str, Any, Any]] = []  # owner, name, original, wrapper
        # namespaces of modules outside the repository, by id (None: not one), and the
        # names bound in each
        self._outside: dict[int, dict[str, Any] | None] = {}
        self._bound: dict[int, tuple[str, ...]] = {}
        self._deciding = False
        self._local = threading.local()  # this thread is working out a file's path
        self._modules: list[Any] = []  # repository modules whose body ran
        self._watched: list[Any] = []
        self.active = False

    def install(self) -> None:
        for name in BUILTINS:
            original = _real_getattr(builtins, name)
            self._replace(builtins, name, original, self._attribute_wrapper(original))
        for module, names in INTROSPECTION.items():
            for name in names:
                original = _real_getattr(module, name, None)
                if original is not None:  # one a Python version dropped
                    self._replace(module, name, original, self._object_wrapper(original))
        for module, names in IMPORTERS.items():
            for name in names:
                original = _real_getattr(module, name)
                self._replace(module, name, original, self._import_wrapper(original))
        _watchers.append(self._patched)
        for owner in {address(owner): owner for owner, *_ in self._replaced}.values():
            if type(owner) is types.ModuleType:
                owner.__class__ = _WatchedModule
                self._watched.append(owner)
        self.active = True

    def _patched(self, owner: Any, name: str) -> None:
        if any(o is owner and n == name for o, n, *_ in self._replaced):
            self.active = False

    def _replace(self, owner: Any, name: str, original: Any, wrapper: Any) -> None:
        wrapper.__name__ = name
        wrapper.__qualname__ = _real_getattr(original, "__qualname__", name)
        wrapper.__module__ = _real_getattr(original, "__module__", owner.__name__)
        wrapper.__doc__ = original.__doc__
        _real_setattr(owner, name, wrapper)
        self._replaced.append((owner, name, original, wrapper))

    def uninstall(self) -> None:
        """Puts the originals back; the record stays active only if every wrapper was still
        in place (a test that replaced one saw calls the record missed)."""
        self.check()
        if self._patched in _watchers:
            _watchers.remove(self._patched)
        for owner in self._watched:
            if type(owner) is _WatchedModule:
                _real_setattr(owner, "__class__", types.ModuleType)
        self._watched.clear()
        for owner, name, original, _ in self._replaced:
            _real_setattr(owner, name, original)
        self._replaced.clear()
        for key, names in self._bound.items():
            namespace = self._outside[key]
            for name in names:
                if namespace is not None and namespace.get(name) is _REAL_BUILTINS[name]:
                    del namespace[name]
        self._bound.clear()

    def ran(self, module: Any) -> None:
        """A repository module's body ran: its namespace is checked at the end even if
        the module has left ``sys.modules`` by then."""
        self._modules.append(module)

    def unrecorded(self, modules: dict[str, Any]) -> list[str]:
        """Repository files whose module binds a wrapped name to anything but its wrapper
        (bound before the collector started, from another library, or star-imported from a
        module outside the repository with the real builtins bound)."""
        wrappers = {name: wrapper for owner, name, _, wrapper in self._replaced}
        out: set[str] = set()
        for module in [*list(modules.values()), *self._modules]:
            rel = self._relative(_real_getattr(module, "__file__", None) or "")
            namespace = _real_getattr(module, "__dict__", None)
            if rel is None or not isinstance(namespace, dict):
                continue
            for names in (*INTROSPECTION.values(), *IMPORTERS.values(), BUILTINS):
                for name in names:
                    bound = namespace.get(name)
                    if bound is not None and bound is not wrappers.get(name):
                        out.add(rel)
        return sorted(out)

    def _bypass(self, namespace: dict[str, Any]) -> None:
        """Note the namespace of a module outside the repository (a module's own, not a
        dict given to ``exec``: that may be the repository's) for :meth:`bind_outside`."""
        key = address(namespace)
        if key in self._outside or self._deciding:
            return
        self._deciding = True  # the looks below call the wrappers too
        try:
            module = sys.modules.get(namespace.get("__name__"))  # type: ignore[arg-type]
            outside = (
                module is not None
                and _real_getattr(module, "__dict__", None) is namespace
                and self._relative(_real_getattr(module, "__file__", None) or "") is None
            )
        except Exception:  # an odd module: its calls keep going through the wrapper
            outside = False
        finally:
            self._deciding = False
        self._outside[key] = namespace if outside else None

    def bind_outside(self) -> None:
        """At a pause of the session: bind the real builtins in the noted namespaces."""
        for key, namespace in list(self._outside.items()):
            if namespace is None or key in self._bound:
                continue
            names = tuple(n for n in BUILTINS if n not in namespace)
            for name in names:
                namespace[name] = _REAL_BUILTINS[name]
            self._bound[key] = names

    def _file(self, filename: str) -> str | None:
        rel = self._files.get(filename, _PENDING)
        if rel is _PENDING:
            if _real_getattr(self._local, "busy", False):
                return None  # a look made while working out a path (pathlib's): not ours
            self._local.busy = True
            try:
                rel = self._files[filename] = self._relative(filename)
            finally:
                self._local.busy = False
        return rel

    def _record(self, rel: str, line: int) -> set[str]:
        by_file = self.seen.setdefault(self._holder.context, {}).setdefault(rel, {})
        return by_file.setdefault(line, set())

    def check(self) -> None:
        """After each test: a wrapper replaced meanwhile means calls went unrecorded."""
        for owner, name, _, wrapper in self._replaced:
            if _real_getattr(owner, name, None) is not wrapper:
                self.active = False

    def _attribute_wrapper(self, original: Any) -> Any:
        getframe = sys._getframe
        file_of = self._file
        record = self._record
        holder = self._holder
        bypass = self._bypass
        # (code file, line, name) -> the context it was last recorded under: a site that
        # repeats a look in one context (a loop, a hot helper) is recorded once, in a few
        # lines; under a line tracer each line here costs a callback
        noted: dict[tuple[str, int, str], str] = {}

        def wrapper(obj: Any, name: Any, *rest: Any) -> Any:
            frame = getframe(1)
            if type(name) is str:
                site = (frame.f_code.co_filename, frame.f_lineno, name)
                if noted.get(site) == holder.context:
                    return original(obj, name, *rest)
            rel = file_of(frame.f_code.co_filename)
            if rel is None:
                bypass(frame.f_globals)
            elif isinstance(name, str):
                record(rel, frame.f_lineno).add("." + name)
                if type(name) is str:
                    noted[site] = holder.context
            return original(obj, name, *rest)

        return wrapper

    def _object_wrapper(self, original: Any) -> Any:
        getframe = sys._getframe
        file_of = self._file
        record = self._record

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            frame = getframe(1)
            rel = file_of(frame.f_code.co_filename)
            if rel is not None:
                given = args[0] if args else next(iter(kwargs.values()), None)
                record(rel, frame.f_lineno).update(
                    object_names(given) if given is not None else {UNNAMED}
                )
            return original(*args, **kwargs)

        return wrapper

    def _import_wrapper(self, original: Any) -> Any:
        getframe = sys._getframe
        file_of = self._file
        record = self._record

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            module = original(*args, **kwargs)
            try:
                frame = getframe(1)
            except ValueError:  # called from a thread C started: no Python caller
                return module
            rel = file_of(frame.f_code.co_filename)
            if rel is not None:
                name = _real_getattr(module, "__name__", None)
                record(rel, frame.f_lineno).add(f"@{name}" if type(name) is str else ANY_MODULE)
            return module

        return wrapper

    def dump(self) -> dict[str, dict[str, dict[str, list[str]]]]:
        return {
            ctx: {
                rel: {str(line): sorted(names) for line, names in lines.items()}
                for rel, lines in files.items()
            }
            for ctx, files in self.seen.items()
        }

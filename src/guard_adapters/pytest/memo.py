"""Evidence that ``functools`` caches hide (loaded by the collector plugin; standard library
only).

A test that hits an ``lru_cache``/``cache`` entry or reads a ``cached_property`` that an
earlier test filled runs none of the code that computed the value, so its own lines do not
show that it depends on that code. While measuring, the collector replaces these decorators
for functions of the repository: each call that fills an entry runs under the coverage
context ``<memo>MODULE:QUALNAME`` (nested fills nest), and every call, hit or miss, records
that the current context consumed that label. The ingest charges a label's lines to every
context that consumed it, transitively.

Only the main thread switches contexts: the collector's context is process-wide, and a fill
in another thread would take the main thread's lines with it.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from guard_adapters.pytest.identity import address
from guard_adapters.pytest.labels import MEMO, HasContext

_REAL_LRU = functools.lru_cache
_make_key = functools._make_key  # the key lru_cache files an entry under
_MAX_ENTRIES = 200_000  # fills remembered per cache; past it, a hit charges every fill
_REAL_CACHED_PROPERTY = functools.cached_property
_ABSENT = object()


class MemoWatcher:
    """Installs the watched decorators; ``switch(label) -> previous`` is the collector's, and
    so is ``resume(previous, fill)``, the way back from a fill to the context that consumed it
    (a plain switch unless given); ``holder.context`` is the current context."""

    def __init__(
        self,
        switch: Callable[[str], str],
        holder: HasContext,
        ours: Callable[[str], bool],
        resume: Callable[[str, str], None] | None = None,
    ) -> None:
        self.switch = switch
        self.resume = resume or self._switch_back
        self.holder = holder
        self.ours = ours  # whether a code file belongs to the repository
        self.consumed: defaultdict[str, set[str]] = defaultdict(set)
        self.main = threading.main_thread()
        self.outer = ""  # the context outside the fills under way, if any

    def _switch_back(self, label: str, fill: str) -> None:
        self.switch(label)

    def current(self) -> str:
        return self.holder.context

    def install(self) -> None:
        # ``functools.cache`` calls the module's ``lru_cache``: it follows
        setattr(functools, "lru_cache", self._lru_cache)  # noqa: B010
        setattr(functools, "cached_property", _watched_property(self))  # noqa: B010

    def uninstall(self) -> None:
        setattr(functools, "lru_cache", _REAL_LRU)  # noqa: B010
        setattr(functools, "cached_property", _REAL_CACHED_PROPERTY)  # noqa: B010

    def label_of(self, func: Any) -> str | None:
        code = getattr(func, "__code__", None)
        if code is None or not self.ours(code.co_filename):
            return None
        return f"{MEMO}{getattr(func, '__module__', '')}:{getattr(func, '__qualname__', '')}"

    def producer(self, label: str) -> str:
        """The label of a fill starting now: the function's, and the context outside every
        fill under way (the test, fixture or import that asked first)."""
        return f"{label}@{self.outer or self.current()}"

    def _lru_cache(self, maxsize: Any = 128, typed: bool = False) -> Any:
        if callable(maxsize) and not isinstance(maxsize, int):  # bare @lru_cache
            return self._lru_cache(128, typed)(maxsize)
        real = _REAL_LRU(maxsize, typed)

        bounded = isinstance(maxsize, int) and maxsize > 0

        def decorate(user_function: Callable[..., Any]) -> Any:
            label = self.label_of(user_function)
            if label is None or maxsize == 0:  # maxsize 0 caches nothing: nothing is hidden
                return real(user_function)
            return _watched_cache(
                self, label, user_function, real, typed, maxsize if bounded else _MAX_ENTRIES
            )

        return decorate


def _key(args: tuple[Any, ...], kwargs: dict[str, Any], typed: bool) -> Any:
    try:
        key = _make_key(args, kwargs, typed)
        hash(key)
    except TypeError:  # unhashable: the real cache raises the same
        return None
    return key


def _watched_cache(
    watcher: MemoWatcher,
    label: str,
    user_function: Callable[..., Any],
    real: Callable[..., Any],
    typed: bool,
    limit: int,
) -> Callable[..., Any]:
    """One ``lru_cache`` of a repository function. Each entry remembers the fill that made
    it, so a hit charges that fill alone; a hit on a fill it forgot (past ``limit`` entries)
    charges every fill the cache has had. Two frames per call: deep recursion stays deep."""
    producers: dict[Any, str] = {}  # cache key -> the label of the fill that made it
    fills: set[str] = set()

    def fill(*args: Any, **kwargs: Any) -> Any:
        reader = watcher.current()
        main = threading.current_thread() is watcher.main
        # off the main thread the context does not switch: the lines go to the reader's
        produced = watcher.producer(label) if main else reader
        fills.add(produced)
        watcher.consumed[reader].add(produced)
        key = _key(args, kwargs, typed)
        if key is not None:
            if len(producers) >= limit:
                producers.clear()
            producers[key] = produced
        if not main:
            return user_function(*args, **kwargs)
        previous = watcher.switch(produced)
        outer = watcher.outer
        watcher.outer = outer or previous
        try:
            return user_function(*args, **kwargs)
        finally:
            watcher.outer = outer
            watcher.resume(previous, produced)

    cached = real(fill)

    @functools.wraps(user_function)
    def call(*args: Any, **kwargs: Any) -> Any:
        reader = watcher.current()
        key = _key(args, kwargs, typed)
        known = producers.get(key) if key is not None else None
        try:
            return cached(*args, **kwargs)
        finally:
            if known is not None:  # a hit (or a refill, which charged itself)
                watcher.consumed[reader].add(known)
            elif key is None or key not in producers:  # a hit on a forgotten fill
                watcher.consumed[reader].update(fills)

    call.cache_info = cached.cache_info  # type: ignore[attr-defined]
    call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    call.cache_parameters = cached.cache_parameters  # type: ignore[attr-defined]
    return call


def _watched_property(watcher: MemoWatcher) -> type:
    """``functools.cached_property`` as a data descriptor, so that reading a cached value
    goes through ``__get__`` (a plain one is found in the instance ``__dict__`` unseen).
    Properties of code outside the repository, and subclasses, keep the real behaviour.

    As an ``lru_cache`` entry does, each instance's value remembers the fill that computed
    it, so a read charges that fill alone; a value whose fill is not known (set by hand, on
    an object no weak reference can follow, or forgotten) charges every fill of the
    property."""

    class cached_property(_REAL_CACHED_PROPERTY[Any]):
        # address(instance) -> (the context last charged its value's fill, address(value));
        # here too, for a subclass that skips our __init__
        _charged: dict[int, tuple[str, int]] = {}

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            func = args[0] if args else kwargs.get("func")
            if cls is watched and watcher.label_of(func) is None:
                plain = _REAL_CACHED_PROPERTY.__new__(_REAL_CACHED_PROPERTY)
                _REAL_CACHED_PROPERTY.__init__(plain, *args, **kwargs)
                return plain
            return super().__new__(cls)

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            own = type(self) is watched
            self._label = watcher.label_of(getattr(self, "func", None)) if own else None
            # address(instance) -> (a weak reference to it, its value's fill, address(value))
            self._producers: dict[int, tuple[weakref.ref[Any], str, int]] = {}
            self._fills: set[str] = set()
            self._charged = {}

        def _producer(self, instance: Any, value: Any) -> Any:
            """The fill labels a read of ``instance``'s ``value`` charges: every fill unless
            the value is still the one that fill stored on this very object."""
            known = self._producers.get(address(instance))
            if known is not None and known[0]() is instance and known[2] == address(value):
                return (known[1],)
            return self._fills

        def _made(self, instance: Any, produced: str, value: Any) -> bool:
            """Note the fill of ``instance``'s value; whether its reads will know it."""
            self._fills.add(produced)
            try:
                ref = weakref.ref(instance)
            except TypeError:  # no weak reference: its reads charge every fill
                return False
            if len(self._producers) >= _MAX_ENTRIES:
                self._producers.clear()
                self._charged.clear()
            self._producers[address(instance)] = (ref, produced, address(value))
            return True

        def __get__(self, instance: Any, owner: type | None = None) -> Any:
            # A hit its context was already charged for charges nothing new: answered in a
            # few lines, since under a line tracer each line of this method costs a callback
            # (on networkx, whose graphs read a cached property at every ``G[n]``, the full
            # method doubled the run).
            seen = self._charged.get(address(instance))
            if seen is not None and seen[0] == watcher.holder.context:
                value = instance.__dict__.get(self.attrname, _ABSENT)
                if address(value) == seen[1]:
                    return value
            return self._get(instance, owner)

        def _get(self, instance: Any, owner: type | None) -> Any:
            label = getattr(self, "_label", None)  # a subclass may skip our __init__
            if instance is None or label is None:
                return super().__get__(instance, owner)
            name = self.attrname or self.func.__name__
            try:
                store = instance.__dict__
            except AttributeError:
                raise TypeError(
                    f"No '__dict__' attribute on {type(instance).__name__!r} "
                    f"instance to cache {name!r} property."
                ) from None
            reader = watcher.current()
            value = store.get(name, _ABSENT)
            if value is not _ABSENT:
                charged = self._producer(instance, value)
                watcher.consumed[reader].update(charged)
                if charged is not self._fills:  # its own fill: the same charge next time
                    self._charged[address(instance)] = (reader, address(value))
                return value
            if threading.current_thread() is not watcher.main:
                # off the main thread the context does not switch: the lines are the reader's
                produced = reader
                value = self.func(instance)
            else:
                produced = watcher.producer(label)
                watcher.consumed[reader].add(produced)
                previous = watcher.switch(produced)
                outer = watcher.outer
                watcher.outer = outer or previous
                try:
                    value = self.func(instance)
                finally:
                    watcher.outer = outer
                    watcher.resume(previous, produced)
            store[name] = value
            if self._made(instance, produced, value):
                self._charged[address(instance)] = (reader, address(value))
            return value

        def _forget(self, instance: Any) -> None:
            producers = getattr(self, "_producers", None)  # a subclass may skip our __init__
            if producers:
                producers.pop(address(instance), None)
            self._charged.pop(address(instance), None)

        def __set__(self, instance: Any, value: Any) -> None:
            self._forget(instance)
            instance.__dict__[self.attrname or self.func.__name__] = value

        def __delete__(self, instance: Any) -> None:
            self._forget(instance)
            try:
                del instance.__dict__[self.attrname or self.func.__name__]
            except KeyError:
                raise AttributeError(self.attrname) from None

    watched = cached_property
    return cached_property

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
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from guard_adapters.pytest.labels import MEMO

_REAL_LRU = functools.lru_cache
_make_key = functools._make_key  # the key lru_cache files an entry under
_MAX_ENTRIES = 200_000  # fills remembered per cache; past it, a hit charges every fill
_REAL_CACHED_PROPERTY = functools.cached_property


class MemoWatcher:
    """Installs the watched decorators; ``switch(label) -> previous`` is the collector's."""

    def __init__(self, switch: Callable[[str], str], current: Callable[[], str],
                 ours: Callable[[str], bool]) -> None:  # fmt: skip
        self.switch = switch
        self.current = current
        self.ours = ours  # whether a code file belongs to the repository
        self.consumed: defaultdict[str, set[str]] = defaultdict(set)
        self.main = threading.main_thread()
        self.outer = ""  # the context outside the fills under way, if any

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

    def filling(self, label: str, compute: Callable[[], Any]) -> Any:
        """Run ``compute`` (the call that fills an entry) under ``label``."""
        if threading.current_thread() is not self.main:
            return compute()
        previous = self.switch(label)
        outer = self.outer
        self.outer = outer or previous
        try:
            return compute()
        finally:
            self.outer = outer
            self.switch(previous)

    def _lru_cache(self, maxsize: Any = 128, typed: bool = False) -> Any:
        if callable(maxsize) and not isinstance(maxsize, int):  # bare @lru_cache
            return self._lru_cache(128, typed)(maxsize)
        real = _REAL_LRU(maxsize, typed)

        def decorate(user_function: Callable[..., Any]) -> Any:
            label = self.label_of(user_function)
            if label is None:
                return real(user_function)
            return _WatchedCache(self, label, user_function, real, typed).call

        return decorate


class _WatchedCache:
    """One ``lru_cache`` of a repository function: each entry remembers the fill that made
    it, so a hit charges that fill alone; a hit whose fill is not known (forgotten past
    ``_MAX_ENTRIES``) charges every fill the cache has had."""

    def __init__(self, watcher: MemoWatcher, label: str, user_function: Callable[..., Any],
                 real: Callable[..., Any], typed: bool) -> None:  # fmt: skip
        self.watcher = watcher
        self.label = label
        self.user_function = user_function
        self.typed = typed
        self.producers: dict[Any, str] = {}  # cache key -> the label of the fill that made it
        self.fills: set[str] = set()
        self.cached = real(self._fill)
        watched = self._call

        @functools.wraps(user_function)
        def call(*args: Any, **kwargs: Any) -> Any:  # a function: it binds as a method does
            return watched(*args, **kwargs)

        call.cache_info = self.cached.cache_info  # type: ignore[attr-defined]
        call.cache_clear = self.cached.cache_clear  # type: ignore[attr-defined]
        call.cache_parameters = self.cached.cache_parameters  # type: ignore[attr-defined]
        self.call = call

    def _key(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            key = _make_key(args, kwargs, self.typed)
            hash(key)
        except TypeError:  # unhashable: the real cache raises the same
            return None
        return key

    def _fill(self, *args: Any, **kwargs: Any) -> Any:
        produced = self.watcher.producer(self.label)
        self.fills.add(produced)
        self.watcher.consumed[self.watcher.current()].add(produced)
        key = self._key(args, kwargs)
        if key is not None:
            if len(self.producers) >= _MAX_ENTRIES:
                self.producers.clear()
            self.producers[key] = produced
        return self.watcher.filling(produced, lambda: self.user_function(*args, **kwargs))

    def _call(self, *args: Any, **kwargs: Any) -> Any:
        reader = self.watcher.current()
        key = self._key(args, kwargs)
        known = self.producers.get(key) if key is not None else None
        try:
            return self.cached(*args, **kwargs)
        finally:
            if known is not None:  # a hit (or a refill, which charged itself)
                self.watcher.consumed[reader].add(known)
            elif key is None or key not in self.producers:  # a hit on a forgotten fill
                self.watcher.consumed[reader].update(self.fills)


def _watched_property(watcher: MemoWatcher) -> type:
    """``functools.cached_property`` as a data descriptor, so that reading a cached value
    goes through ``__get__`` (a plain one is found in the instance ``__dict__`` unseen)."""

    class cached_property(_REAL_CACHED_PROPERTY[Any]):
        def __new__(cls, func: Any, *args: Any) -> Any:
            if watcher.label_of(func) is None:
                plain = _REAL_CACHED_PROPERTY.__new__(_REAL_CACHED_PROPERTY)
                _REAL_CACHED_PROPERTY.__init__(plain, func, *args)
                return plain
            return super().__new__(cls)

        def __init__(self, func: Any, *args: Any) -> None:
            super().__init__(func, *args)
            self._label = watcher.label_of(func) or MEMO

        def __get__(self, instance: Any, owner: type | None = None) -> Any:
            if instance is None:
                return self
            label = self._label
            watcher.consumed[watcher.current()].add(label)
            store = instance.__dict__
            name = self.attrname or self.func.__name__
            if name in store:
                return store[name]
            value = watcher.filling(label, lambda: self.func(instance))
            store[name] = value
            return value

        def __set__(self, instance: Any, value: Any) -> None:
            instance.__dict__[self.attrname or self.func.__name__] = value

        def __delete__(self, instance: Any) -> None:
            try:
                del instance.__dict__[self.attrname or self.func.__name__]
            except KeyError:
                raise AttributeError(self.attrname) from None

    return cached_property

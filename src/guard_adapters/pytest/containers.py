"""Evidence that plain dict caches hide (loaded by the collector plugin; standard library only).

A module-level or class-level dict that a repository module leaves empty when its body has run
is filled later, by whoever asks first: a cache, a registry, a memo table. A test that finds an
entry another test put there runs none of the code that computed it. While measuring, the
collector swaps such dicts for :class:`WatchedDict`, which splits the asker's coverage context
into *segments* at each miss: the lines run between a key's miss and its write are that key's
*fill* (``<fill>N``, through the segments it spans), and a later read of the key by another
context charges the fill to the reader. A write with no miss before it (or one past the budget
of segments) charges the writer's whole context instead: wider, never narrower.

The swap keeps identity: a dict is swapped only where every reference to it is one the scan
can rebind (module globals, class attributes, values of a module- or class-level dict).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from guard_adapters.pytest.labels import FILL, IMPORT, SEGMENT, SESSION

_SHARED = (SESSION, IMPORT)
Mark = tuple[str, int, Any]  # owner, index of the segment opened, the frame that asked
_MAX_SEGMENTS = 20_000  # per process; past it every dict goes quiet
_MAX_PENDING = 1_000  # misses remembered per dict, waiting for their write
_MAX_OPENINGS = 2_000  # misses per dict that may open a segment; past it, it goes quiet


class FillTracker:
    """Segments and fills of every watched dict of the process. ``switch`` and ``current``
    are the collector's; ``consumed`` is shared with the functools watcher."""

    def __init__(
        self,
        switch: Callable[[str], str],
        current: Callable[[], str],
        consumed: defaultdict[str, set[str]],
    ) -> None:
        self.switch = switch
        self.current = current
        self.consumed = consumed
        self.main = threading.main_thread()
        self.owner_of: dict[str, str] = {}  # a segment or fill label -> the context it is part of
        self.segments: defaultdict[str, list[str]] = defaultdict(list)  # owner -> in order
        self.opened = 0
        self.fills = 0
        # fills written whose code is still running: (label, owner, first segment, frame)
        self.unsettled: list[tuple[str, str, int, Any]] = []

    def owner(self) -> str:
        ctx = self.current()
        return self.owner_of.get(ctx, ctx)

    def can_open(self) -> bool:
        return self.opened < _MAX_SEGMENTS and threading.current_thread() is self.main

    def open_segment(self) -> tuple[str, int]:
        """Start a new segment of the current owner; its place in the owner's list."""
        owner = self.owner()
        self.opened += 1
        label = f"{SEGMENT}{self.opened}"
        self.owner_of[label] = owner
        mine = self.segments[owner]
        mine.append(label)
        self.consumed[owner].add(label)
        self.switch(label)
        return owner, len(mine) - 1

    def mark(self, depth: int) -> Mark:
        """A new segment where an entry was found missing, and the frame ``depth`` levels up
        that asked: the code that will compute the entry."""
        owner, index = self.open_segment()
        return owner, index, sys._getframe(depth)

    def fill(self, mark: Mark | None) -> tuple[str, str]:
        """The label charged to later readers of an entry written now, and its owner."""
        owner = self.owner()
        if mark is None or mark[0] != owner or not self.can_open():
            return owner, owner
        self.fills += 1
        label = f"{FILL}{self.fills}"
        self.owner_of[label] = owner
        self.unsettled.append((label, owner, mark[1], mark[2]))
        self.settle()
        return label, owner

    def settle(self, reopen: bool = True) -> None:
        """Ends the fills whose asking frame has returned. A fill does not end at its write:
        code often stores a value and then finishes it (a module is cached, then its
        transforms run), so it spans every segment until the code that found the entry
        missing is done (seen at the next watched read or write, or context switch: an
        approximation that can only make a fill longer). ``reopen``: cut the current
        owner's segment, unless the context is about to switch anyway."""
        live = set()
        frame: Any = sys._getframe(1)
        while frame is not None:
            live.add(id(frame))
            frame = frame.f_back
        still = [fill for fill in self.unsettled if id(fill[3]) in live]
        if len(still) == len(self.unsettled):
            return
        ended = [fill for fill in self.unsettled if id(fill[3]) not in live]
        self.unsettled = still
        for label, owner, start, _ in ended:
            self._end(label, owner, start)
        if reopen and any(owner == self.owner() for _, owner, _, _ in ended):
            self.open_segment()  # what runs from here on is not part of those fills

    def finish(self) -> None:
        """At the end of the run: every fill still under way ends here."""
        for label, owner, start, _ in self.unsettled:
            self._end(label, owner, start)
        self.unsettled = []

    def _end(self, label: str, owner: str, start: int) -> None:
        spanned = set(self.segments[owner][start:])
        ctx = self.current()
        if self.owner_of.get(ctx) == owner:
            spanned.add(ctx)
        self.consumed[label].update(spanned)

    def read(self, producer: tuple[str, str] | None) -> None:
        # a fill made by start-up or an import is in every test's evidence already
        if producer is None or producer[1].startswith(_SHARED):
            return
        if producer[1] != self.owner():
            self.consumed[self.current()].add(producer[0])


class _Slots(dict[Any, Any]):
    """The layout a watched dict and a quiet one share, so one can become the other."""

    __slots__ = (
        "_every",
        "_openings",
        "_pending",
        "_producers",
        "_since",
        "_tracker",
        "default_factory",
    )
    default_factory: Callable[[], Any] | None  # the defaultdict kinds' factory

    def __reduce_ex__(self, protocol: Any) -> Any:  # copies and pickles are plain dicts
        return (dict, (dict.copy(self),))

    # a watched dict may go quiet inside one of its own methods: the rest of it does nothing
    def _miss(self, key: Any) -> None:
        pass

    def _wrote(self, key: Any) -> None:
        pass


class QuietDict(_Slots):
    """A watched dict that stopped watching: a plain dict again, at the C dict's speed."""

    __slots__ = ()


class WatchedDict(_Slots):
    """A dict that records which fill made each entry and who read it."""

    __slots__ = ()

    def _watch(self, tracker: FillTracker) -> None:
        self._tracker = tracker
        self._producers: dict[Any, tuple[str, str]] = {}
        self._pending: dict[Any, Mark] = {}
        self._openings = 0
        self._since: Mark | None = None  # where the last clear() happened
        tracker.fills += 1
        self._every = f"{FILL}{tracker.fills}"  # consumed by whoever reads every entry
        tracker.owner_of[self._every] = ""

    def _miss(self, key: Any) -> None:
        tracker = self._tracker
        if key in self._pending or threading.current_thread() is not tracker.main:
            return
        if self._openings >= _MAX_OPENINGS or not tracker.can_open():
            # a fine-grained memo table (an inference cache keyed by node): cutting a
            # segment per entry costs more than the run; the static memo-function rule
            # (every caller of the memoised entry point) covers it from here on
            self._quiet()
            return
        if tracker.unsettled:
            tracker.settle()
        pending = self._pending
        # misses a finished context left (a failed import: never written) hold their frames
        if pending and (
            len(pending) >= _MAX_PENDING or next(iter(pending.values()))[0] != tracker.owner()
        ):
            pending.clear()
        self._openings += 1
        pending[key] = tracker.mark(3)  # _miss <- the dict method <- its caller

    def _hit(self, key: Any) -> None:
        tracker = self._tracker
        if tracker.unsettled:
            tracker.settle()
        tracker.read(self._producers.get(key))

    def _wrote(self, key: Any) -> None:
        tracker = self._tracker
        made = tracker.fill(self._pending.pop(key, None) or self._since)
        self._producers[key] = made
        tracker.consumed[self._every].add(made[0])

    def _read_all(self) -> None:
        self._tracker.consumed[self._tracker.current()].add(self._every)

    def __getitem__(self, key: Any) -> Any:
        if dict.__contains__(self, key):
            self._hit(key)
            return dict.__getitem__(self, key)
        self._miss(key)
        value = dict.__getitem__(self, key)  # KeyError, or a subclass's __missing__
        if dict.__contains__(self, key):
            self._wrote(key)
        return value

    def __contains__(self, key: Any) -> bool:
        if dict.__contains__(self, key):
            self._hit(key)
            return True
        self._miss(key)
        return False

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            self._hit(key)
            return dict.__getitem__(self, key)
        self._miss(key)
        return default

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            self._hit(key)
            return dict.__getitem__(self, key)
        dict.__setitem__(self, key, default)
        self._wrote(key)
        return default

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self._wrote(key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other: Any) -> Any:  # type: ignore[misc]
        self.update(other)
        return self

    def pop(self, key: Any, *default: Any) -> Any:
        if dict.__contains__(self, key):
            self._hit(key)
            self._producers.pop(key, None)
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        key, value = dict.popitem(self)
        self._hit(key)
        self._producers.pop(key, None)
        return key, value

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, key)
        self._producers.pop(key, None)

    def clear(self) -> None:
        """A refill after a clear is computed after it: the segment opened here bounds the
        fills of keys written with no miss before them."""
        dict.clear(self)
        self._producers.clear()
        self._pending.clear()
        if self._tracker.can_open():
            self._since = self._tracker.mark(2)  # clear <- its caller

    def __len__(self) -> int:
        self._read_all()
        return dict.__len__(self)

    def __iter__(self) -> Iterator[Any]:
        self._read_all()
        return dict.__iter__(self)

    def keys(self) -> Any:
        self._read_all()
        return dict.keys(self)

    def values(self) -> Any:
        self._read_all()
        return dict.values(self)

    def items(self) -> Any:
        self._read_all()
        return dict.items(self)

    def copy(self) -> dict[Any, Any]:
        self._read_all()
        return dict.copy(self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        self._read_all()
        return _Slots.__reduce_ex__(self, protocol)

    def _quiet(self) -> None:
        self._producers.clear()
        self._pending.clear()
        quiet: type[_Slots] = (
            QuietDefaultDict if isinstance(self, WatchedDefaultDict) else QuietDict
        )
        self.__class__ = quiet  # type: ignore[assignment]


def _missing(self: Any, key: Any) -> Any:
    """``defaultdict.__missing__``: the factory fills a missing key (a write)."""
    if self.default_factory is None:
        raise KeyError(key)
    value = self.default_factory()
    dict.__setitem__(self, key, value)
    return value


def _reduce_default(self: Any, protocol: Any) -> Any:
    return (defaultdict, (self.default_factory, dict.copy(self)))


class WatchedDefaultDict(WatchedDict):
    """A ``defaultdict``'s behaviour on a watched dict."""

    __slots__ = ()
    __missing__ = _missing

    def __reduce_ex__(self, protocol: Any) -> Any:
        self._read_all()
        return _reduce_default(self, protocol)


class QuietDefaultDict(_Slots):
    __slots__ = ()
    __missing__ = _missing
    __reduce_ex__ = _reduce_default


# While counting, the object is held by ``_swap``'s local and ``getrefcount``'s argument.
_OUR_REFERENCES = 2


class ContainerSwapper:
    """Swaps the empty dicts a repository module left behind for watched ones."""

    def __init__(self, tracker: FillTracker) -> None:
        self.tracker = tracker
        self.swapped: list[str] = []  # where each watched dict was found, for the report

    def module_ran(self, module: Any) -> None:
        # never break an import: an unwatched dict only hides evidence, as before
        with contextlib.suppress(Exception):
            self._swap_in(module)

    def _swap_in(self, module: Any) -> None:
        for found in _places(module).values():
            if self._swap(found):
                holder, key, _ = found[0]
                where = getattr(holder, "__qualname__", getattr(holder, "__name__", "{}"))
                self.swapped.append(f"{module.__name__}:{where}.{key}")

    def _swap(self, found: list[tuple[Any, Any, bool]]) -> bool:
        holder, key, attr = found[0]
        original = getattr(holder, key) if attr else holder[key]
        # every reference is one of the places found: nothing else would see the swap
        if sys.getrefcount(original) != len(found) + _OUR_REFERENCES:
            return False
        watched: WatchedDict
        if type(original) is defaultdict:
            watched = WatchedDefaultDict()
            watched.default_factory = original.default_factory
        else:
            watched = WatchedDict()
        watched._watch(self.tracker)
        for holder, key, attr in found:
            if attr:
                setattr(holder, key, watched)
            else:
                dict.__setitem__(holder, key, watched)
        return True


def _places(module: Any) -> defaultdict[int, list[tuple[Any, Any, bool]]]:
    """Where each empty dict of a module's globals and classes is held, by its id."""
    places: defaultdict[int, list[tuple[Any, Any, bool]]] = defaultdict(list)
    name = getattr(module, "__name__", None)
    classes: set[int] = set()  # a class bound under two names is scanned once
    for key, value in list(vars(module).items()):
        if key.startswith("__"):
            continue
        _found(places, module, key, value, attr=True)
        if (
            isinstance(value, type)
            and value.__module__ == name
            and id(value) not in classes
            and not _is_enum(value)
        ):
            classes.add(id(value))
            for ckey, cvalue in list(vars(value).items()):
                if not ckey.startswith("__"):
                    _found(places, value, ckey, cvalue, attr=True)
    return places


def _found(
    places: defaultdict[int, list[tuple[Any, Any, bool]]],
    holder: Any,
    key: Any,
    value: Any,
    *,
    attr: bool,
) -> None:
    kind = type(value)
    if kind is dict and value:  # a table: its empty dict values may be caches
        if attr:
            for inner_key, inner in list(value.items()):
                _found(places, value, inner_key, inner, attr=False)
        return
    if (kind is dict or kind is defaultdict) and not value:
        places[id(value)].append((holder, key, attr))


def _is_enum(cls: type) -> bool:
    import enum

    return isinstance(cls, enum.EnumMeta)

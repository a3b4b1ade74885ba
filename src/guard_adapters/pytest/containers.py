"""Evidence that plain dict caches hide (loaded by the collector plugin; standard library only).

A module-level or class-level dict that a repository module leaves empty when its body has run
is filled later, by whoever asks first: a cache, a registry, a memo table. A test that finds an
entry another test put there runs none of the code that computed it. While measuring, the
collector swaps such dicts for :class:`WatchedDict`, which cuts the asker's coverage context
into *segments* at each miss. An entry's *fill* (``<fill>N``) is the segments from its miss
until the code that looked it up returns; a later read of the entry by another context charges
the fill to the reader. A write with no miss before it charges everything its writer ran up
to the write's caller returning: wider, never narrower.

The swap keeps identity: a dict is swapped only where every reference to it is one the scan
can rebind (module globals, class attributes, values of a module- or class-level dict).
"""

from __future__ import annotations

import sys
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from guard_adapters.pytest.identity import address
from guard_adapters.pytest.labels import FILL, IMPORT, OWN, SEGMENT, SESSION

_SHARED = (SESSION, IMPORT)
_MAX_SEGMENTS = 20_000  # per process; past it every dict goes quiet
_MAX_OPENINGS = 2_000  # misses per dict that may open a segment; past it, it goes quiet
_MAX_UNSETTLED = 500  # fills under way; past it the oldest end with their owner
Mark = tuple[str, int, Any]  # owner, index of its first segment in the fill, the frame that asked
_MISSING = object()


def _frame(depth: int) -> Any:
    """The frame ``depth`` levels above the caller (0: the caller itself)."""
    try:
        return sys._getframe(depth + 1)
    except ValueError:  # a shallow stack (an atexit hook): ends at the next look
        return None


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
        self.stopped = False
        self.watched: list[WatchedDict] = []
        # fills written whose code is still running: (label, owner, first segment, frame)
        self.unsettled: list[tuple[str, str, int, Any]] = []

    def owner(self) -> str:
        ctx = self.current()
        return self.owner_of.get(ctx, ctx)

    def on_main(self) -> bool:
        return threading.current_thread() is self.main

    def can_open(self) -> bool:
        return not self.stopped and self.opened < _MAX_SEGMENTS and self.on_main()

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
        """A new segment where an entry was found missing, and the frame ``depth`` levels
        above the caller: the code that will compute the entry."""
        owner, index = self.open_segment()
        return owner, index, _frame(depth)

    def fill(self, mark: Mark | None, depth: int) -> tuple[str, str]:
        """The label charged to later readers of an entry written now, and its owner. With
        no miss before the write, the fill is everything the owner ran so far (its own lines
        and all its segments), until the caller ``depth`` frames up returns."""
        owner = self.owner()
        if not self.can_open():
            return owner, owner  # no segment to end the fill with: the whole owner
        self.fills += 1
        label = f"{FILL}{self.fills}"
        self.owner_of[label] = owner
        if mark is None or mark[0] != owner:
            self.consumed[label].add(OWN + owner)
            mark = (owner, 0, _frame(depth))
        self.unsettled.append((label, owner, mark[1], mark[2]))
        if len(self.unsettled) > _MAX_UNSETTLED:
            label0, owner0, start0, _ = self.unsettled.pop(0)
            self.unsettled.append((label0, owner0, start0, None))  # ends with its owner
        self.settle()
        return label, owner

    def settle(self, reopen: bool = True) -> None:
        """Ends the fills whose asking frame has returned. A fill does not end at its write:
        code often stores a value and then finishes it (a module is cached, then its
        transforms run), so it spans every segment until the code that found the entry
        missing is done (seen at the next watched read or write, or context switch: an
        approximation that can only make a fill longer). ``reopen``: cut the current
        owner's segment, unless the context is about to switch anyway."""
        if not self.unsettled or not self.on_main():
            return
        # the asking frames not found on the stack have returned; the walk stops once all
        # are found (they are held here, so no running frame can reuse their ids)
        gone = {address(fill[3]) for fill in self.unsettled if fill[3] is not None}
        frame: Any = sys._getframe(1)
        while frame is not None and gone:
            gone.discard(address(frame))
            frame = frame.f_back
        if not gone:
            return
        still: list[tuple[str, str, int, Any]] = []
        ended: list[tuple[str, str, int, Any]] = []
        for fill in self.unsettled:
            frame = fill[3]
            (ended if frame is not None and address(frame) in gone else still).append(fill)
        self.unsettled = still
        owner = self.owner()
        for label, filler, start, _ in ended:
            self._end(label, filler, start)
        if reopen and not self.stopped and any(filler == owner for _, filler, _, _ in ended):
            self.open_segment()  # what runs from here on is not part of those fills

    def owner_done(self, owner: str) -> None:
        """A test (or fixture) finished: its fills end, and the misses it left waiting let
        go of their frames."""
        keep = []
        for fill in self.unsettled:
            if fill[1] == owner:
                self._end(fill[0], owner, fill[2])
            else:
                keep.append(fill)
        self.unsettled = keep
        for watched in self.watched:
            watched._forget(owner)

    def finish(self) -> None:
        """At the end of the run: every fill still under way ends here, and no segment is
        opened after it (the tracer is about to stop)."""
        for label, owner, start, _ in self.unsettled:
            self._end(label, owner, start)
        self.unsettled = []
        self.stopped = True

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
        ctx = self.current()
        # the owner has its own fills' lines already, but one of its segments may be part of
        # a fill under way, whose later readers need what that read too
        if ctx != producer[1]:
            self.consumed[ctx].add(producer[0])


class _Slots(dict[Any, Any]):
    """The layout a watched dict and a quiet one share, so one can become the other."""

    __slots__ = ("_every", "_openings", "_pending", "_producers", "_since", "_tracker")
    _every: str
    _openings: int
    _pending: dict[Any, Mark]
    _producers: dict[Any, tuple[str, str]]
    _since: Mark | None
    _tracker: FillTracker

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # one made by user code (``type(d)()``, ``fromkeys``) is a plain dict in all but name
        dict.__init__(self, *args, **kwargs)
        self.__class__ = QuietDict

    def __reduce_ex__(self, protocol: Any) -> Any:  # copies and pickles are plain dicts
        return (dict, (), None, None, iter(dict.items(self)))

    # a watched dict may go quiet inside one of its own methods: the rest of it does nothing
    def _miss(self, key: Any) -> None:
        pass

    def _wrote(self, key: Any) -> None:
        pass

    def _forget(self, owner: str) -> None:
        pass


class QuietDict(_Slots):
    """A watched dict that stopped watching: a plain dict again, at the C dict's speed."""

    __slots__ = ()


class WatchedDict(_Slots):
    """A dict that records which fill made each entry and who read it."""

    __slots__ = ()

    @classmethod
    def watching(cls, tracker: FillTracker) -> WatchedDict:
        self: WatchedDict = dict.__new__(cls)
        self._tracker = tracker
        self._producers = {}
        self._pending = {}
        self._openings = 0
        self._since = None  # where the last clear() happened
        tracker.fills += 1
        self._every = f"{FILL}{tracker.fills}"  # consumed by whoever reads every entry
        tracker.owner_of[self._every] = ""
        tracker.watched.append(self)
        return self

    def _miss(self, key: Any) -> None:
        tracker = self._tracker
        if key in self._pending or not tracker.on_main():
            return
        if self._openings >= _MAX_OPENINGS or not tracker.can_open():
            # a fine-grained memo table (an inference cache keyed by node): cutting a
            # segment per entry costs more than the run; the static memo-function rule
            # (every caller of the memoised entry point) covers it from here on
            self._quiet()
            return
        tracker.settle()
        self._openings += 1
        self._pending[key] = tracker.mark(3)  # _miss <- the dict method <- its caller

    def _hit(self, key: Any) -> None:
        tracker = self._tracker
        tracker.settle()
        tracker.read(self._producers.get(key))

    def _wrote(self, key: Any) -> None:
        tracker = self._tracker
        mark = self._pending.pop(key, None) or self._since
        made = tracker.fill(mark, 3)  # _wrote <- the dict method <- its caller
        self._producers[key] = made
        tracker.consumed[self._every].add(made[0])

    def _forget(self, owner: str) -> None:
        if self._pending and next(iter(self._pending.values()))[0] == owner:
            self._pending.clear()
        if self._since is not None and self._since[0] == owner:
            self._since = None

    def _read_all(self) -> None:
        self._tracker.consumed[self._tracker.current()].add(self._every)

    def _quiet(self) -> None:
        self._producers.clear()
        self._pending.clear()
        self._since = None
        self.__class__ = QuietDict  # type: ignore[assignment]

    def __getitem__(self, key: Any) -> Any:
        value = dict.get(self, key, _MISSING)
        if value is _MISSING:
            self._miss(key)
            raise KeyError(key)
        self._hit(key)
        return value

    def __contains__(self, key: Any) -> bool:
        if dict.__contains__(self, key):
            self._hit(key)
            return True
        self._miss(key)
        return False

    def get(self, key: Any, default: Any = None) -> Any:
        value = dict.get(self, key, _MISSING)
        if value is _MISSING:
            self._miss(key)
            return default
        self._hit(key)
        return value

    def setdefault(self, key: Any, default: Any = None) -> Any:
        present = dict.__contains__(self, key)
        value = dict.setdefault(self, key, default)
        if present:
            self._hit(key)
        else:
            self._wrote(key)
        return value

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


def _probe_references() -> int:
    """What holds an object while ``_swap`` counts it (its local, ``getrefcount``'s
    argument, and what the interpreter borrows), measured rather than assumed."""
    holder: dict[str, dict[Any, Any]] = {"probe": {}}
    original = holder["probe"]  # as in _swap: one holder, one local, then the count
    return _count(original) - 1


def _count(original: Any) -> int:
    return sys.getrefcount(original)


_OUR_REFERENCES = _probe_references()


class ContainerSwapper:
    """Swaps the empty dicts a repository module left behind for watched ones."""

    def __init__(self, tracker: FillTracker) -> None:
        self.tracker = tracker
        self.swapped: list[str] = []  # where each watched dict was found, for the report

    def module_ran(self, module: Any) -> None:
        # never break an import: an unwatched dict only hides evidence, as before
        try:
            self._swap_in(module)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:  # pytest.fail() raised by a lazy object the scan touched
            pass

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
        if _count(original) != len(found) + _OUR_REFERENCES:
            return False
        watched = WatchedDict.watching(self.tracker)
        done: list[tuple[Any, Any, bool]] = []
        try:
            for place in found:
                holder, key, attr = place
                if attr:
                    setattr(holder, key, watched)
                else:
                    dict.__setitem__(holder, key, watched)
                done.append(place)
        except Exception:  # put back what was rebound: one dict for every holder
            for holder, key, attr in done:
                if attr:
                    setattr(holder, key, original)
                else:
                    dict.__setitem__(holder, key, original)
            watched._quiet()
            return False
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
        kind = type(value)  # never isinstance(): a lazy proxy would evaluate itself
        if (
            issubclass(kind, type)
            and address(value) not in classes
            and vars(value).get("__module__") == name
            and not _is_enum(kind)
        ):
            classes.add(address(value))
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
    if type(value) is not dict:  # defaultdicts and other kinds keep their own type
        return
    if value:  # a table: its empty dict values may be caches
        if attr:
            for inner_key, inner in list(value.items()):
                _found(places, value, inner_key, inner, attr=False)
        return
    places[address(value)].append((holder, key, attr))


def _is_enum(metaclass: type) -> bool:
    import enum

    return issubclass(metaclass, enum.EnumMeta)

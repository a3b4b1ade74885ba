"""The collector's watched dicts: they behave as dicts, and they tell which fill made each
entry and who read it (the coverage context switches are recorded, not made)."""

from __future__ import annotations

import copy
import pickle
import sys
import types
from collections import defaultdict

import pytest

from guard_adapters.pytest.containers import ContainerSwapper, FillTracker, QuietDict, WatchedDict


class Contexts:
    """The collector's context: what ``switch`` set last."""

    def __init__(self) -> None:
        self.context = "test_a"
        self.notes: list[tuple[str, str]] = []  # (context, what ran): stands for lines

    def note(self, what: str) -> None:
        self.notes.append((self.context, what))

    def switch(self, label: str) -> str:
        previous, self.context = self.context, label
        return previous


@pytest.fixture
def ctx() -> Contexts:
    return Contexts()


@pytest.fixture
def tracker(ctx: Contexts) -> FillTracker:
    return FillTracker(ctx.switch, lambda: ctx.context, defaultdict(set))


def watched(tracker: FillTracker) -> WatchedDict:
    return WatchedDict.watching(tracker)


def closure(tracker: FillTracker, ctx: str) -> set[str]:
    seen: set[str] = set()
    frontier = set(tracker.consumed.get(ctx, ()))
    while frontier:
        seen |= frontier
        frontier = {n for label in frontier for n in tracker.consumed.get(label, ())} - seen
    return seen


def segment_lines(tracker: FillTracker, label: str) -> set[str]:
    return {s for s in closure(tracker, label) | {label} if s.startswith("<seg>")}


def test_a_dict_watched_behaves_as_a_dict(tracker: FillTracker) -> None:
    d = watched(tracker)
    d["a"] = 1
    assert d.setdefault("a", 5) == 1 and d.setdefault("b", 2) == 2
    d.update({"c": 3}, e=4)
    d |= {"f": 6}
    assert d.get("zz") is None and d.get("zz", 0) == 0 and "zz" not in d
    with pytest.raises(KeyError):
        d["zz"]
    assert d.pop("f") == 6 and d.pop("f", None) is None
    del d["e"]
    assert dict(d) == {"a": 1, "b": 2, "c": 3} == copy.copy(d) == copy.deepcopy(d)
    assert {**d} == {"a": 1, "b": 2, "c": 3} and len(d) == 3 and sorted(d) == ["a", "b", "c"]
    assert type(pickle.loads(pickle.dumps(d))) is dict
    assert isinstance(d, dict)
    d.clear()
    assert not d


def test_a_dict_made_from_a_watched_one_by_user_code_is_a_plain_one(
    tracker: FillTracker,
) -> None:
    d = watched(tracker)
    d["k"] = [d]
    made = type(d)(a=1)
    assert made == {"a": 1} and type(made) is QuietDict and made.get("b") is None
    assert type(d).fromkeys("xy") == {"x": None, "y": None}
    twin = copy.deepcopy(d)
    assert twin["k"][0] is twin  # a cycle through the dict keeps its identity


def compute(d: WatchedDict, ctx: Contexts, key: str, note: str) -> None:
    """A memo function: looks the key up, computes the value (lines under ``note``), stores
    it, then finishes it."""
    if key in d:
        return
    ctx.note(note)
    d[key] = [note]
    ctx.note(note + "-after-store")


def charged_notes(ctx: Contexts, tracker: FillTracker, reader: str) -> set[str]:
    """At the end of the run, what ran in the segments charged to ``reader``."""
    tracker.finish()
    by_segment = defaultdict(set)
    for label, what in ctx.notes:
        by_segment[label].add(what)
    return set().union(*(by_segment[s] for s in segment_lines(tracker, reader)))


def test_a_reader_is_charged_the_segments_between_the_miss_and_the_end_of_the_fill(
    ctx: Contexts, tracker: FillTracker
) -> None:
    d = watched(tracker)
    compute(d, ctx, "x", "fill-x")
    assert d.get("other") is None  # the next watched event ends the fill of "x"
    ctx.note("rest-of-test-a")
    ctx.switch("test_b")
    assert "x" in d and d["x"] == ["fill-x"]
    assert charged_notes(ctx, tracker, "test_b") == {"fill-x", "fill-x-after-store"}


def test_a_fill_that_reads_an_entry_its_own_test_filled_before_charges_that_entry_too(
    ctx: Contexts, tracker: FillTracker
) -> None:
    d = watched(tracker)
    compute(d, ctx, "base", "fill-base")
    assert d.get("other") is None  # ends the fill of "base"
    assert "top" not in d  # the miss of "top": its fill reads "base", filled above
    assert d["base"] == ["fill-base"]
    d["top"] = ["top"]
    assert d.get("other") is None
    ctx.switch("test_b")
    assert d["top"] == ["top"]
    assert "fill-base" in charged_notes(ctx, tracker, "test_b")


def test_a_read_by_the_filling_context_itself_charges_nothing(
    ctx: Contexts, tracker: FillTracker
) -> None:
    d = watched(tracker)
    d.get("k")
    d["k"] = 1
    assert d["k"] == 1
    tracker.finish()
    assert tracker.consumed["test_a"] == {s for s in tracker.owner_of if s.startswith("<seg>")}


def test_a_write_with_no_miss_before_it_charges_what_its_writer_ran_until_then(
    ctx: Contexts, tracker: FillTracker
) -> None:
    d = watched(tracker)
    assert d.get("warm-up") is None  # a segment of test_a before the write
    before = ctx.context

    def register() -> None:
        d["k"] = 1

    register()
    assert d.get("after") is None  # the write's caller has returned: the fill ends
    after = ctx.context
    ctx.switch("test_b")
    assert d["k"] == 1
    tracker.finish()
    reached = closure(tracker, "test_b")
    assert "<own>test_a" in reached and before in reached
    assert after not in reached and "test_a" not in reached


def test_a_refill_after_clear_is_bounded_by_the_clear(ctx: Contexts, tracker: FillTracker) -> None:
    d = watched(tracker)
    d["k"] = 1
    before = ctx.context

    def rebuild() -> None:
        d.clear()
        d["k"] = 2  # no miss: the clear bounds the fill

    rebuild()
    ctx.switch("test_b")
    assert d["k"] == 2
    tracker.finish()
    assert "test_a" not in tracker.consumed["test_b"]
    assert before not in closure(tracker, "test_b")
    assert segment_lines(tracker, "test_b")


def test_iterating_a_watched_dict_reads_every_fill(ctx: Contexts, tracker: FillTracker) -> None:
    d = watched(tracker)
    d["a"] = 1  # no miss: what the writer ran until then
    ctx.switch("test_b")
    assert list(d.items()) == [("a", 1)]
    assert "<own>test_a" in closure(tracker, "test_b")


def test_a_dict_past_its_miss_budget_goes_quiet_and_stays_a_dict(
    tracker: FillTracker, monkeypatch: pytest.MonkeyPatch
) -> None:
    import guard_adapters.pytest.containers as containers

    monkeypatch.setattr(containers, "_MAX_OPENINGS", 3)
    d = watched(tracker)
    for i in range(5):
        assert i not in d
        d[i] = i
    assert type(d) is QuietDict
    assert d == {i: i for i in range(5)} and d.get(9, "no") == "no"
    tracker.owner_done("test_a")  # the tracker still lists it: a quiet dict has nothing to do


def module(source: str) -> types.ModuleType:
    mod = types.ModuleType("sample_mod")
    exec(compile(source, "sample_mod.py", "exec"), mod.__dict__)
    sys.modules["sample_mod"] = mod
    return mod


def test_the_swapper_watches_empty_dicts_a_module_left_and_keeps_aliases_one(
    tracker: FillTracker,
) -> None:
    mod = module(
        "import collections\nCACHE = {}\nALIAS = CACHE\nTABLE = {'a': 1}\n"
        "BY_KIND = collections.defaultdict(list)\n"
        "class Manager:\n    brain = {'modules': {}, 'limit': 3}\n    seen = {}\n"
    )
    try:
        ContainerSwapper(tracker).module_ran(mod)
        assert type(mod.CACHE) is WatchedDict and mod.ALIAS is mod.CACHE
        assert type(mod.TABLE) is dict and type(mod.BY_KIND) is defaultdict
        assert type(mod.Manager.brain) is dict
        assert type(mod.Manager.brain["modules"]) is WatchedDict
        assert type(mod.Manager.seen) is WatchedDict
    finally:
        del sys.modules["sample_mod"]


def test_the_swapper_leaves_a_dict_held_where_it_cannot_rebind(tracker: FillTracker) -> None:
    mod = module(
        "CACHE = {}\ndef lookup(k, cache=CACHE):\n    return cache.get(k)\n"
        "SEEN = {}\nHOLDER = [SEEN]\n"
    )
    try:
        ContainerSwapper(tracker).module_ran(mod)
        assert type(mod.CACHE) is dict and mod.lookup.__defaults__[0] is mod.CACHE
        assert type(mod.SEEN) is dict and mod.HOLDER[0] is mod.SEEN
    finally:
        del sys.modules["sample_mod"]

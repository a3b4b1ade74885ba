"""One check asks the store each question once, and a caller cannot spoil a cached answer."""

from __future__ import annotations

from typing import Any

from guard_core.model import CoverEdge
from guard_core.read_cache import cached
from guard_core.testing import FakeStore

EDGE = CoverEdge("pkg/m.py::f", "tests/test_m.py::test_f")


class Counting(FakeStore):
    calls: list[tuple[str, Any]]

    def covering_tests(
        self, function_ids: Any, min_confidence: float = 0.0, lines: bool = True
    ) -> list[CoverEdge]:
        ids = list(function_ids)
        self.calls.append(("covering_tests", ids))
        return super().covering_tests(ids, min_confidence, lines)


def test_the_same_question_is_asked_once_whatever_the_iterable() -> None:
    store = Counting(edges=[EDGE])
    store.calls = []
    reader = cached(store)
    first = reader.covering_tests(["pkg/m.py::f"])
    again = reader.covering_tests(fid for fid in ["pkg/m.py::f"])  # a generator, read once
    assert first == again == [EDGE]
    assert store.calls == [("covering_tests", ["pkg/m.py::f"])]
    reader.covering_tests(["pkg/m.py::f"], 0.5)  # another question
    assert len(store.calls) == 2


class Shared(FakeStore):
    def tests_of_files(self, paths: Any) -> dict[str, list[str]]:
        return {"tests/test_m.py": self.tests}  # its own list, as a store may hand out


def test_a_changed_answer_leaves_the_cached_one_alone() -> None:
    store = Shared(tests=["t1", "t2"])
    reader = cached(store)
    reader.tests_of_files(["tests/test_m.py"])["tests/test_m.py"].clear()
    assert reader.tests_of_files(["tests/test_m.py"]) == {"tests/test_m.py": ["t1", "t2"]}
    assert store.tests == ["t1", "t2"]


def test_a_new_check_sees_what_was_written_since() -> None:
    store = FakeStore(tests=["t1"])
    assert cached(store).all_tests() == ["t1"]
    store.tests.append("t2")
    assert cached(store).all_tests() == ["t1", "t2"]

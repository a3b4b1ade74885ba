"""Unknown and injection-shaped ids for `feedback`, `callers` and `covering-tests`: feedback
refuses what the graph does not hold (exit 2, graph unchanged), queries answer or refuse
without a traceback, nothing is ever interpolated into Cypher, and `guard run` never fails
because a selected id stopped collecting."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.hostile.conftest import Sample
from tests.hostile.harness import (
    SUITE,
    C,
    assert_clear_error,
    assert_no_traceback,
    assert_wider,
    replace,
)

REAL_FUNCTION = "pkg/core.py::mul"
REAL_TEST = C + "test_mul"
HOSTILE = [
    "tests/test_nope.py::test_ghost",
    "tests/test_core.py::test_ghost",
    "pkg/core.py::nope",
    "x'y",
    'x"y',
    "}) MATCH (n) DETACH DELETE n //",
    "'}) MATCH (n) DETACH DELETE n //",
    "' OR 1=1 //",
    "a\\b",
    "\\",
    "$id`x`",
    "ü::名前",
    "-n",
    " ",
]
IDS = [
    "ghost-file", "ghost-test", "ghost-function", "quote", "double-quote", "cypher-close",
    "cypher-quote-close", "or-1=1", "backslash", "lone-backslash", "param-backtick", "unicode",
    "leading-dash", "blank",
]  # fmt: skip
assert len(IDS) == len(HOSTILE)


@pytest.fixture
def sample(sample: Sample) -> Iterator[Sample]:
    """Each scenario starts from the ingested evidence, whatever the previous one wrote."""
    yield sample
    sample.restore_graph()


def _opt(flag: str, value: str) -> str:
    return f"{flag}={value}"  # `--test=-n` keeps a leading dash a value


def _graph_still_whole(sample: Sample) -> None:
    sample.assert_graph_unchanged()
    out = sample.guard("covering-tests", "--repo", str(sample.repo), "--json", REAL_FUNCTION)
    assert out.returncode == 0, out.describe()
    assert REAL_TEST in out.stdout, "the real evidence is gone\n" + out.describe()


@pytest.mark.parametrize("bad", HOSTILE, ids=IDS)
def test_feedback_refuses_an_unknown_test(sample: Sample, bad: str) -> None:
    out = sample.guard(
        "feedback", "--repo", str(sample.repo), _opt("--function", REAL_FUNCTION),
        _opt("--test", bad),
    )  # fmt: skip
    assert_clear_error(out)
    _graph_still_whole(sample)


@pytest.mark.parametrize("bad", HOSTILE[2:], ids=IDS[2:])
def test_feedback_refuses_an_unknown_function(sample: Sample, bad: str) -> None:
    out = sample.guard(
        "feedback", "--repo", str(sample.repo), _opt("--function", bad), _opt("--test", REAL_TEST)
    )
    assert_clear_error(out)
    _graph_still_whole(sample)


@pytest.mark.parametrize("command", ["callers", "covering-tests"])
@pytest.mark.parametrize("bad", HOSTILE, ids=IDS)
def test_queries_with_unknown_ids(sample: Sample, command: str, bad: str) -> None:
    out = sample.guard(command, "--repo", str(sample.repo), "--json", "--", bad)
    assert_no_traceback(out)
    if out.returncode == 0:
        data = out.json()
        assert REAL_TEST not in out.stdout, data  # nothing matched by accident
    else:
        assert_clear_error(out)
    sample.assert_graph_unchanged()


def test_ghost_feedback_never_breaks_later_runs(sample: Sample) -> None:
    """Even if a ghost id got in, a later `guard run` of an edit that selects it must not
    exit 2 ("file or directory not found"): it runs what exists and reports the failure."""
    ghost = sample.guard(
        "feedback", "--repo", str(sample.repo), "--function", REAL_FUNCTION,
        "--test", "tests/test_nope.py::test_ghost",
    )  # fmt: skip
    assert_no_traceback(ghost)
    replace(sample.repo, "pkg/core.py", "return a * b", "return a * b + 1")
    run = sample.run()
    assert run.returncode == 1, "expected the failing tests to be reported\n" + run.describe()


def test_selected_test_renamed_since_the_ingest(sample: Sample) -> None:
    """The evidence names tests/test_text.py::test_words; the edit renames it (and breaks the
    code it reads): the old id no longer collects, the new one fails and must run."""
    replace(sample.repo, "tests/test_text.py", "def test_words():", "def test_words_v2():")
    replace(sample.repo, "pkg/text.py", ".split()", ".split()[::-1]")
    decision = sample.check(suite=[*SUITE, "tests/test_text.py::test_words_v2"])
    assert_wider(decision, ["tests/test_text.py::test_words_v2"], SUITE)
    run = sample.run()
    assert run.returncode == 1, "a renamed test made guard run error or pass\n" + run.describe()


def test_selected_test_file_deleted_since_the_ingest(sample: Sample) -> None:
    (sample.repo / "tests/test_text.py").unlink()
    replace(sample.repo, "pkg/text.py", ".split()", ".split()[::-1]")
    replace(sample.repo, "pkg/core.py", "return a * b", "return a * b + 1")
    decision = sample.check(suite=[t for t in SUITE if not t.startswith("tests/test_text.py")])
    assert_wider(decision, [C + "test_mul"], [])
    run = sample.run()
    assert run.returncode == 1, "a deleted test file made guard run error or pass\n" + (
        run.describe()
    )

"""Which selected tests a run did not run: the check that keeps a run from passing for tests
pytest never ran (outside its rootdir, left out by its configuration, in another project)."""

from __future__ import annotations

from collections.abc import Iterable


def _collapse(nodeid: str) -> str:
    """A parametrised id as its test function (``t.py::test_x[1]`` -> ``t.py::test_x``)."""
    path, sep, qual = nodeid.partition("::")
    return path + sep + qual.split("[", 1)[0] if sep else path


def _prefixes(test: str) -> list[str]:
    """``a.py::C::t`` -> ``a.py``, ``a.py::C`` (the collectors above it)."""
    parts = test.split("::")
    return ["::".join(parts[:i]) for i in range(1, len(parts))]


def unrun(
    expected: Iterable[str],
    ran: Iterable[str],
    collected: Iterable[str] = (),
    deselected: Iterable[str] = (),
) -> list[str]:
    """The ``expected`` ids (repo-relative) that no outcome in ``ran`` accounts for, sorted.

    An outcome accounts for its own test function and for the file or class it lives in; an
    outcome of a file or class (it failed or was skipped as a whole at collection) accounts for
    every test inside it. An expected file (a new or changed test module) needs no outcome:
    it may hold no test at all. A test whose file pytest ``collected`` but which it neither
    ran nor ``deselected`` is gone from that file (deleted, renamed, never a test on this
    platform): accounted for. One whose file it never collected, or that it deselected, did
    not run."""
    outcomes = {_collapse(r) for r in ran}
    covered = set(outcomes)
    for outcome in outcomes:
        covered.update(_prefixes(outcome))
    files = set(collected)
    left_out = {_collapse(d) for d in deselected}
    missing = set()
    for test in expected:
        if "::" not in test:
            continue
        own = _collapse(test)
        if own in covered or any(p in outcomes for p in _prefixes(own)):
            continue
        if own.partition("::")[0] in files and own not in left_out:
            continue
        missing.add(test)
    return sorted(missing)


def unrun_note(missing: list[str], shown: int = 5) -> str:
    """One line naming the selected tests that did not run."""
    more = f" and {len(missing) - shown} more" if len(missing) > shown else ""
    return (
        f"{len(missing)} selected tests did not run (outside pytest's rootdir or testpaths, "
        f"or left out by its configuration): {', '.join(missing[:shown])}{more}"
    )

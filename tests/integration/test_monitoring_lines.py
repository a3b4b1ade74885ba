"""The ``sys.monitoring`` collector (Python >= 3.12) sees the same lines per test as
coverage.py's tracer, on code shapes where arming line events as each code object starts
could lose some: a generator resumed by a later test, a one-statement module imported by a
test, code first run inside a fixture or a thread, lambdas, class bodies, coroutines."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

from guard_adapters.coverage.ingest import read_evidence, run_collector
from tests.conftest import make_repo

FILES = {
    "pkg/__init__.py": "",
    "pkg/one.py": "X = 1\n",
    "pkg/shapes.py": (
        "import threading\n"
        "def f(): return 1\n"
        "def g():\n"
        "    k = lambda x: (\n"
        "        x + 1\n"
        "    )\n"
        "    return k(1)\n"
        "def gen():\n"
        "    yield 1\n"
        "    yield 2\n"
        "class C:\n"
        "    a = 1\n"
        "    def m(self):\n"
        "        return [i * self.a for i in range(3)]\n"
        "async def co():\n"
        "    return 5\n"
        "def in_thread():\n"
        "    out = []\n"
        "    t = threading.Thread(target=lambda: out.append(\n"
        "        f()))\n"
        "    t.start(); t.join()\n"
        "    return out\n"
        "def fails():\n"
        "    try:\n"
        "        raise ValueError\n"
        "    except ValueError:\n"
        "        return 3\n"
        "def setup():\n"
        "    return {'ready': True}\n"
    ),
    "tests/conftest.py": (
        "import pytest\n"
        "from pkg.shapes import setup\n"
        "@pytest.fixture\n"
        "def ready():\n"
        "    return setup()\n"
    ),
    "tests/test_shapes.py": (
        "import asyncio\n"
        "from pkg.shapes import C, co, f, fails, g, gen, in_thread\n"
        "it = gen()\n"
        "def test_import():\n"
        "    import pkg.one\n"
        "    assert pkg.one.X == 1\n"
        "def test_calls():\n"
        "    assert f() == 1 and g() == 2 and fails() == 3\n"
        "def test_gen_first():\n"
        "    assert next(it) == 1\n"
        "def test_gen_second():\n"
        "    assert next(it) == 2\n"
        "def test_class():\n"
        "    assert C().m() == [0, 1, 2]\n"
        "def test_coroutine():\n"
        "    assert asyncio.run(co()) == 5\n"
        "def test_thread():\n"
        "    assert in_thread() == [1]\n"
        "def test_fixture(ready):\n"
        "    assert ready['ready']\n"
    ),
}


def _evidence(repo: Path, python: str) -> dict[str, dict[str, frozenset[int]]]:
    """What each test ran, measured by ``python``'s collector."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        payload = run_collector(repo, python, (), None, out)
        return read_evidence(repo, out, payload).executed


def test_monitoring_sees_the_lines_coverage_sees(
    tmp_path: Path, monitoring_python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "shapes", FILES)
    monkeypatch.setenv("GUARD_COLLECTOR", "coverage")  # coverage.py's tracer on any Python
    by_coverage = _evidence(repo, sys.executable)
    monkeypatch.setenv("GUARD_COLLECTOR", "auto")
    by_monitoring = _evidence(repo, monitoring_python)
    assert len(by_coverage) == 8
    # the resumed generator's second line belongs to the test that resumed it
    assert by_monitoring["tests/test_shapes.py::test_gen_second"]["pkg/shapes.py::gen"] == {10}
    assert by_monitoring == by_coverage


def test_the_oldest_and_newest_python_see_the_same_lines(
    tmp_path: Path, matrix_python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python 3.10 (coverage.py's tracer) and 3.13 (sys.monitoring) measure the same shapes
    as this interpreter's coverage.py: the same lines, per test."""
    repo = make_repo(tmp_path / "shapes", FILES)
    monkeypatch.setenv("GUARD_COLLECTOR", "coverage")
    here = _evidence(repo, sys.executable)
    monkeypatch.setenv("GUARD_COLLECTOR", "auto")
    assert _evidence(repo, matrix_python) == here

"""The ``ast`` indexer states the same facts as libcst's reference (``tests/libcst_reference``),
file by file: on code written to hit every scope rule, and on Guard's own source.
``benchmarks/index_identity.py`` runs the same comparison on the eval targets' sdists."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard_adapters.index.index import RawIndex, index_file
from guard_adapters.pytest.layout import PytestLayout
from tests.libcst_reference import reference_index_file

SCOPE_RULES = '''\
"""Doc."""
import os.path
import json as j, xml.etree.ElementTree
from . import sibling
from ..up import thing as t, other
from pkg.base import *
try:
    import simplejson as json
except ImportError as err:
    json = None
CONST = json.dumps if json is not None else j.dumps
print(__doc__, err, CONST, True, False)
X = [y for y in range(3) if y for z in range(y)]
D = {k: v for k, v in zip("ab", "cd")}
G = (n := 10, n + 1)
import string
for string in sorted(string):
    pass

def deco(*args, **kwargs):
    return lambda f, default=CONST: f

class Meta(type):
    pass

class Base(metaclass=Meta):
    LIMIT = 1
    OTHER = LIMIT + 1
    items: list[int] = []

    @deco(size=LIMIT)
    def method(self, a: int = OTHER, *rest, key=None, **kw) -> "Base":
        local: os.PathLike = a
        global COUNT
        COUNT = 1
        self.helper().value.attr = a
        del self.helper
        values = [a.b for a in rest]
        firsts = [w[0] if (w := m) else {w: m, **kw} for m in rest]
        print(firsts, *values, end=key)
        with open(os.path.join("x")) as handle, handle as again:
            for i, v in enumerate(values):
                pass
            else:
                i = None
        try:
            pass
        except (ValueError, TypeError) as e:
            print(e, f"{again!r:>{i}}")
        return self.helper(key=key)[0].attr

    def helper(self):
        def inner():
            nonlocal state
            state = 2
            return state, sibling.X, t, other, LIMIT, make()
        state = 1
        return inner

def use():
    return COUNT, Base.LIMIT, os.path.sep, json.loads, xml.etree.ElementTree.parse

def matcher(value):
    match value:
        case {"k": [first, *others], **rest}:
            return first, others, rest
        case Base(LIMIT=limit) as base if limit:
            return base
        case None | True:
            return missing
        case _:
            return __doc__.strip()

def loads(name):
    import importlib
    mod = importlib.import_module("pkg.plug" "ins")
    top = __import__("pkg.sibling")
    rel = __import__("sibling", globals(), None, ["X"], 1), __import__("a", level=0)
    return mod, top, importlib.import_module(name), __import__(f"pkg.{name}"), __import__(b"x"), rel
'''


def facts(raw: RawIndex) -> tuple[object, ...]:
    f = raw.file
    return (f.parse_error, f.functions, f.tests, raw.calls, raw.imports, raw.dotted, raw.aliases)


def both(path: str, data: bytes, module: str | None, is_test: bool = False) -> tuple:
    layout = PytestLayout()
    return (
        facts(reference_index_file(path, data, module, layout, is_test)),
        facts(index_file(path, data, module, layout, is_test)),
    )


@pytest.mark.parametrize("star", [True, False], ids=["star-import", "no-star-import"])
def test_every_scope_rule_gives_the_same_facts_both_ways(star: bool) -> None:
    # a star import makes every name a module reads its own too: it would hide a wrong read
    source = SCOPE_RULES if star else SCOPE_RULES.replace("from pkg.base import *\n", "")
    reference, fast = both("pkg/sub/m.py", source.encode(), "pkg.sub.m")
    assert fast[0] is None and len(fast[1]) > 8  # parsed, with its functions
    assert fast == reference
    tests = source.replace("def use", "def test_use").replace("class Base", "class TestBase")
    assert both("tests/test_m.py", tests.encode(), "tests.test_m", True)[1][2]  # tests found
    reference, fast = both("tests/test_m.py", tests.encode(), "tests.test_m", True)
    assert fast == reference


def guard_sources() -> list[Path]:
    src = Path(__file__).resolve().parents[2] / "src"
    return sorted((src / "guard_adapters" / "python").glob("*.py"))


@pytest.mark.parametrize("path", guard_sources(), ids=lambda p: p.name)
def test_guards_own_modules_give_the_same_facts_both_ways(path: Path) -> None:
    rel = f"src/guard_adapters/python/{path.name}"
    module = f"guard_adapters.python.{path.stem}"
    reference, fast = both(rel, path.read_bytes(), module)
    assert fast == reference

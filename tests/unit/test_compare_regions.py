"""Table-driven (before, after) pairs: each change kind maps to exactly these changed ids."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guard_adapters.python.compare import (
    DEFAULT_ATTRIBUTES,
    SIGNATURE_ATTRIBUTES,
    compare_modules,
)
from guard_adapters.python.regions import extract_regions
from guard_core.model import ChangeKind


def signature_names(
    name: str, attributes: tuple[str, ...] = SIGNATURE_ATTRIBUTES
) -> tuple[str, ...]:
    return tuple(f"{name}.{a}" for a in attributes)


def default_names(name: str) -> tuple[str, ...]:
    """A changed default value: no new code object, annotations or wrapped function."""
    return signature_names(name, DEFAULT_ATTRIBUTES)


BASE = '''\
"""Module doc."""
import os

LIMIT = 10


def helper(a, b=1):
    """Helper doc."""
    total = a + b
    return total * LIMIT


@cache
def cached(x):
    return x


class Shape:
    sides = 0

    def area(self):
        return 0

    @property
    def name(self):
        return "shape"

    @name.setter
    def name(self, value):
        self._name = value


def outer():
    def inner():
        return 1
    return inner()
'''


def changes(before: str, after: str) -> dict[str, tuple[str, bool, bool, tuple[str, ...], bool]]:
    old = extract_regions("pkg/m.py", before)
    new = extract_regions("pkg/m.py", after)
    return {
        c.id.split("::", 1)[1]: (
            c.kind.value,
            c.body_changed,
            c.definition_changed,
            c.names,
            c.side_effects,
        )
        for c in compare_modules(old, new, "pkg.m")
    }


CASES = [
    ("comment only", "    total = a + b\n", "    total = a + b  # why\n", {}),
    ("blank lines", "\n\nclass Shape:", "\n\n\n\nclass Shape:", {}),
    (
        "body token",
        "return total * LIMIT",
        "return total // LIMIT",
        {"helper": ("modified", True, False, (), False)},
    ),
    (
        "negated condition in nested",
        "        return 1\n",
        "        return not 1\n",
        {"outer.<locals>.inner": ("modified", True, False, (), False)},
    ),
    (
        "constant",
        "LIMIT = 10",
        "LIMIT = 11",
        {"<module>": ("modified", False, True, ("pkg.m.LIMIT",), False)},
    ),
    (
        "constant from a call",
        "LIMIT = 10",
        "LIMIT = compute()",
        {"<module>": ("modified", False, True, ("pkg.m.LIMIT",), True)},
    ),
    (
        "module-level call",
        "LIMIT = 10\n",
        "LIMIT = 10\nregister()\n",
        {"<module>": ("modified", False, True, (), True)},
    ),
    (
        "import changes module set",
        "import os\n",
        "import os\nimport json\n",
        {"<module>": ("modified", False, True, ("pkg.m.json",), True)},
    ),
    (
        "class attribute",
        "    sides = 0",
        "    sides = 3",
        {"Shape.<body>": ("modified", False, True, ("pkg.m.Shape.sides",), False)},
    ),
    (
        "class bases",
        "class Shape:",
        "class Shape(Base):",
        {"Shape.<body>": ("modified", False, True, ("pkg.m.Shape",), True)},
    ),
    (
        "exception base",
        "class Shape:",
        "class Shape(ValueError):",
        {"Shape.<body>": ("modified", False, True, ("pkg.m.Shape",), False)},
    ),
    (
        "shadowing a builtin",
        "LIMIT = 10",
        "LIMIT = 10\nlen = None",
        {"<module>": ("modified", False, True, ("pkg.m.len",), True)},
    ),
    (
        "signature default",
        "def helper(a, b=1):",
        "def helper(a, b=2):",
        {"helper": ("modified", False, True, default_names("pkg.m.helper"), False)},
    ),
    (
        "signature default and annotation",
        "def helper(a, b=1):",
        "def helper(a, b: int = 2):",
        {"helper": ("modified", False, True, signature_names("pkg.m.helper"), False)},
    ),
    (
        "new keyword parameter with a default",
        "def helper(a, b=1):",
        "def helper(a, b=1, *, c=None):",
        {"helper": ("modified", False, True, signature_names("pkg.m.helper"), False)},
    ),
    (
        "removed parameter: every caller",
        "def helper(a, b=1):",
        "def helper(a):",
        {"helper": ("modified", False, True, ("pkg.m.helper",), False)},
    ),
    (
        "new required parameter: every caller",
        "def helper(a, b=1):",
        "def helper(a, c, b=1):",
        {"helper": ("modified", False, True, ("pkg.m.helper",), False)},
    ),
    (
        "default removed: every caller",
        "def helper(a, b=1):",
        "def helper(a, b):",
        {"helper": ("modified", False, True, ("pkg.m.helper",), False)},
    ),
    (
        "docstring",
        '"""Helper doc."""',
        '"""Helper docs."""',
        {"helper": ("modified", False, True, ("pkg.m.helper.__doc__",), False)},
    ),
    (
        "pure decorator added",
        "def helper(a, b=1):",
        "@staticmethod\ndef helper(a, b=1):",
        {"helper": ("modified", False, True, ("pkg.m.helper",), False)},
    ),
    (
        "registering decorator added",
        "def helper(a, b=1):",
        "@app.route('/')\ndef helper(a, b=1):",
        {"helper": ("modified", False, True, ("pkg.m.helper",), True)},
    ),
    (
        "decorator removed",
        "@cache\ndef cached",
        "def cached",
        {"cached": ("modified", False, True, ("pkg.m.cached",), False)},
    ),
    (
        "registering decorator removed",
        "@cache\ndef cached",
        "@register\ndef cached",
        {"cached": ("modified", False, True, ("pkg.m.cached",), True)},
    ),
    (
        "property setter body",
        "        self._name = value",
        "        self._name = value.strip()",
        {"Shape.name.setter": ("modified", True, False, (), False)},
    ),
    (
        "method added",
        "    def area(self):\n        return 0\n",
        "    def area(self):\n        return 0\n\n    def volume(self):\n        return 0\n",
        {
            "Shape.<body>": ("modified", False, True, ("pkg.m.Shape.volume",), False),
            "Shape.volume": ("added", True, True, ("pkg.m.Shape.volume",), False),
        },
    ),
    (
        "function deleted",
        "@cache\ndef cached(x):\n    return x\n",
        "",
        {
            "<module>": ("modified", False, True, ("pkg.m.cached",), False),
            "cached": ("deleted", True, True, ("pkg.m.cached",), False),
        },
    ),
    (
        "function renamed",
        "def outer():",
        "def outer2():",
        {
            "<module>": ("modified", False, True, ("pkg.m.outer", "pkg.m.outer2"), False),
            "outer2": ("renamed", False, True, ("pkg.m.outer", "pkg.m.outer2"), False),
            "outer.<locals>.inner": ("deleted", True, True, ("pkg.m.outer.<locals>.inner",), False),
            "outer2.<locals>.inner": ("added", True, True, ("pkg.m.outer2.<locals>.inner",), False),
        },
    ),
    (
        "nested def header is the outer body",
        "    def inner():",
        "    def inner(x=1):",
        {
            "outer": ("modified", True, False, (), False),
            "outer.<locals>.inner": (
                "modified",
                False,
                True,
                signature_names("pkg.m.outer.<locals>.inner"),
                False,
            ),
        },
    ),
]


@pytest.mark.parametrize(("label", "old", "new", "expected"), CASES, ids=[c[0] for c in CASES])
def test_change_kinds(label: str, old: str, new: str, expected: dict[str, object]) -> None:
    assert old in BASE, label
    after = BASE.replace(old, new, 1)
    assert changes(BASE, after) == expected


def test_duplicate_names_get_distinct_ids() -> None:
    src = textwrap.dedent("""
        import sys
        if sys.version_info >= (3, 11):
            def f():
                return 1
        else:
            def f():
                return 2

        class K:
            @property
            def v(self):
                return 1

            @v.setter
            def v(self, x):
                pass

            @overload
            def m(self, a: int) -> int: ...
            @overload
            def m(self, a: str) -> str: ...
            def m(self, a):
                return a
    """)
    ids = [r.qualname for r in extract_regions("m.py", src).regions.values()]
    assert ids == ["<module>", "f", "f#2", "K.<body>", "K.v", "K.v.setter", "K.m", "K.m#2", "K.m#3"]
    old = extract_regions("m.py", src)
    new = extract_regions("m.py", src.replace("return 2", "return 3"))
    assert [c.id for c in compare_modules(old, new, "m")] == ["m.py::f#2"]


def test_every_line_has_one_owner() -> None:
    regions = extract_regions("pkg/m.py", BASE)
    lines = BASE.splitlines()
    owner = {i + 1: regions.owner(i + 1).split("::")[1] for i in range(len(lines))}
    assert owner[lines.index("    return total * LIMIT") + 1] == "helper"
    assert owner[lines.index("def helper(a, b=1):") + 1] == "<module>"  # runs at import
    assert owner[lines.index("@cache") + 1] == "<module>"
    assert owner[lines.index("    sides = 0") + 1] == "Shape.<body>"
    assert owner[lines.index("    @property") + 1] == "Shape.<body>"
    assert (
        owner[lines.index("        return inner()".strip() and "    return inner()") + 1] == "outer"
    )
    assert owner[lines.index("        return 1") + 1] == "outer.<locals>.inner"


def test_dynamic_dispatch_is_flagged() -> None:
    src = textwrap.dedent("""
        def a(obj, name):
            return getattr(obj, name)()
        def b(obj):
            return getattr(obj, "fixed")
        def c(handlers, name, **kw):
            return handlers[name](**kw)
        def d(code):
            return eval(code)
        def e(mod):
            import importlib
            return importlib.import_module(mod)
    """)
    flags = {r.name: r.dynamic_dispatch for r in extract_regions("m.py", src).functions()}
    assert flags == {"a": True, "b": False, "c": True, "d": True, "e": True}


FUNCS = ["alpha", "beta", "gamma"]


def _module(bodies: dict[str, list[str]]) -> str:
    out = ["import os", "", "K = 1", ""]
    for name in FUNCS:
        out.append(f"def {name}(x):")
        out += [f"    {line}" for line in bodies[name]]
        out.append("")
    return "\n".join(out) + "\n"


statements = st.sampled_from(
    [
        "x = x + 1",
        "x = x * 2",
        "if x:\n        x -= 1",
        "x = os.sep + str(x)",
        "pass",
        "x = [i for i in range(3)]",
        "y = x or K",
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    target=st.sampled_from(FUNCS),
    before=st.lists(statements, min_size=1, max_size=4),
    after=st.lists(statements, min_size=1, max_size=4),
)
def test_any_body_edit_maps_to_that_function_only(
    target: str, before: list[str], after: list[str]
) -> None:
    base = {name: ["x = x + 1", "return x"] for name in FUNCS}
    old_bodies = {**base, target: [*before, "return x"]}
    new_bodies = {**base, target: [*after, "return x"]}
    got = changes_for(_module(old_bodies), _module(new_bodies))
    if before == after:
        assert got == []
    else:
        assert got == [f"pkg/m.py::{target}"]


def changes_for(before: str, after: str) -> list[str]:
    return [
        c.id
        for c in compare_modules(
            extract_regions("pkg/m.py", before), extract_regions("pkg/m.py", after), "pkg.m"
        )
        if c.kind is ChangeKind.MODIFIED
    ]


def test_a_decorator_that_only_wraps_is_not_import_time_code() -> None:
    import ast

    from guard_adapters.python.decorators import only_wraps

    wraps_only = ast.parse(
        "def logged(f):\n    name = f.__name__\n    @functools.wraps(f)\n"
        "    def wrapper(*a):\n        return f(*a)\n    return t.cast(F, wrapper)\n"
    ).body[0]
    registers = ast.parse("def route(f):\n    ROUTES.append(f)\n    return f\n").body[0]
    marks = ast.parse("def mark(f):\n    f.marked = True\n    return f\n").body[0]
    assert isinstance(wraps_only, ast.FunctionDef) and only_wraps(wraps_only)
    assert isinstance(registers, ast.FunctionDef) and not only_wraps(registers)
    assert isinstance(marks, ast.FunctionDef) and not only_wraps(marks)
    old = extract_regions("m.py", "@logged\ndef f():\n    return 1\n")
    new = extract_regions("m.py", "def f():\n    return 1\n")
    plain = {c.id: c.side_effects for c in compare_modules(old, new, "m")}
    pure = {c.id: c.side_effects for c in compare_modules(old, new, "m", frozenset({"logged"}))}
    assert any(plain.values()) and not any(pure.values())


@pytest.mark.parametrize(
    ("body", "reads"),
    [
        ("return d.get(k)", {"get()"}),  # only called: its evidence shows the callee
        ("return d.get", {"get"}),  # held as a value
        ("f = d.get\n    return d.get(k)", {"get"} | {"get()"}),
        ("try:\n        return d.get(k)\n    except TypeError:\n        pass", {"get"}),
        ("with pytest.raises(TypeError):\n        d.get(k)", {"raises()", "get"}),
        ("with open(k):\n        d.get(k)", {"get()"}),  # open() is not an expected failure
        ("return getattr(d, 'get')", {"get"}),
        ("return getattr(d, k)", {"*~"}),  # its names are recorded at run time
        ("getattr = print\n    return getattr(d, k)", {"*"}),  # not the builtin
        ("return vars(d)[k]", {"*"}),  # not recorded
        (
            "with mock.patch('pkg.m.C.get', autospec=True):\n        return k.run()",
            {"patch()", "get", "run()"},
        ),  # the mock holds C.get: a signature check, no body
        ("with mock.patch.object(C, 'get'):\n        pass", {"patch", "object()", "get"}),
        # an import by a computed name holds what its run imported (recorded), or any module
        (
            "import importlib\n    return importlib.import_module(k).X",
            {"import_module()", "@~", "X"},
        ),
        ("return __import__(k, fromlist=['X']).X", {"*", "@*", "X"}),
        ("__import__(k)\n    return k", {"*"}),  # its value is discarded: it holds nothing
        ("return __import__('a.b', level=0)", {"*"}),  # by name: the index's import
        ("return __import__('b', globals(), None, ['x'], 1)", {"*", "@*"}),  # relative
    ],
)
def test_attribute_reads_tell_calls_from_values(body: str, reads: set[str]) -> None:
    regions = extract_regions("m.py", f"def f(d, k):\n    {body}\n")
    (fn,) = regions.functions()
    assert fn.attributes == reads


def test_a_read_in_a_definitions_header_is_not_in_its_record() -> None:
    """Defaults and decorators run where the function is defined, not in its calls."""
    regions = extract_regions(
        "m.py", "@deco(getattr(C, K))\ndef f(d, k=getattr(C, K)):\n    return getattr(d, k)\n"
    )
    (fn,) = regions.functions()
    assert fn.attribute_spans["*~"] == {(3, 3)}
    assert fn.attribute_spans["*"] == {(1, 1), (2, 2)}


@pytest.mark.parametrize(
    ("header", "call", "read"),
    [
        ("import inspect", "inspect.signature(g)", "__signature__~"),
        ("import inspect as ins", "ins.getfullargspec(g)", "__signature__~"),
        ("from inspect import signature", "signature(g)", "__signature__~"),
        ("import typing", "typing.get_type_hints(g)", "__signature__~"),
        # another library's function of the same name is not recorded
        ("from funcsigs import signature", "signature(g)", "__signature__"),
        ("from inspect import signature\nsignature = None", "signature(g)", "__signature__"),
        ("import funcsigs as inspect", "inspect.signature(g)", "__signature__"),
        ("from m2 import *\nimport inspect", "inspect.signature(g)", "__signature__"),
    ],
)
def test_a_signature_read_is_recorded_only_through_the_standard_library(
    header: str, call: str, read: str
) -> None:
    regions = extract_regions("m.py", f"{header}\ndef f(g):\n    return {call}\n")
    (fn,) = regions.functions()
    assert read in fn.attributes
    assert {"__signature__", "__signature__~"} - {read} & fn.attributes == set()


OWN_METHOD = """import inspect


class Gen:
    def signature(self, node):
        return node

    def patch(self, target):
        return target

    def visit(self, node):
        self.signature(node)
        other.signature(node)
        self.patch("pkg.handler.Audit.emit")

    @staticmethod
    def plain(obj):
        return obj.signature(None)
"""


def test_a_method_named_like_an_introspection_call_is_no_introspection() -> None:
    """``self.signature(node)`` calls the class's own ``signature``; the same name on any
    other receiver, or a static method's argument, may still be ``inspect``'s."""
    regions = extract_regions("m.py", OWN_METHOD)
    visit = regions.regions["m.py::Gen.visit"]
    assert visit.attribute_spans["__signature__"] == {(13, 13)}  # other.signature(node) only
    assert "signature()" in visit.attributes
    assert "emit" in visit.attributes  # what an own ``patch`` is given is still a read
    assert "__signature__" in regions.regions["m.py::Gen.plain"].attributes


STDLIB_READS = """import tokenize
import os.path
import sys as system
import time

if getattr(tokenize._compile, "__wrapped__", None) is None:
    tokenize._compile = tokenize._compile

x = os.path.join.__defaults__, time.sleep.__kwdefaults__


def f(g):
    return g.__wrapped__, system.stdout.__class__, system.stdout.encoding


def h():
    os = object()  # os is not only the module here
    return os
"""


def test_introspecting_a_standard_library_object_is_not_reading_a_repository_one() -> None:
    regions = extract_regions("pkg/m.py", STDLIB_READS)
    module = regions.regions["pkg/m.py::<module>"]
    (f,) = [r for r in regions.functions() if r.name == "f"]
    assert "__wrapped__" not in module.attributes and "__kwdefaults__" not in module.attributes
    assert "_compile" in module.attributes  # not a dunder: tokenize._compile may be anything
    assert {"__defaults__", "join"} <= module.attributes  # `os` is rebound in h(): any object
    # of g, which may be anything; sys.stdout is often a repository object
    assert f.attributes == {"__wrapped__", "__class__", "encoding", "stdout"}
    # a package of the repository named like the standard library's module is the repository's
    shadowing = extract_regions("lib/time/m.py", STDLIB_READS).regions["lib/time/m.py::<module>"]
    assert "__kwdefaults__" in shadowing.attributes and "__wrapped__" not in shadowing.attributes
    star = extract_regions("pkg/m.py", "from pkg.compat import *\n" + STDLIB_READS)
    assert "__wrapped__" in star.regions["pkg/m.py::<module>"].attributes


@pytest.mark.parametrize(
    ("body", "memo"),
    [
        ("if k not in CACHE:\n        CACHE[k] = g(k)\n    return CACHE[k]", True),
        ("return self._cache.setdefault(k, g(k))", True),
        (
            "v = ctx.seen.get(k)\n    if v is None:\n        ctx.seen[k] = v = g(k)\n    return v",
            True,
        ),
        ("d = {}\n    d[k] = g(k)\n    return d[k]", False),  # a local container
        ("return CACHE[k]", False),  # read only: filled elsewhere, at import time perhaps
        ("CACHE[k] = g(k)", False),  # write only
        ("global CACHE\n    CACHE = {}\n    CACHE[k] = g(k)\n    return CACHE[k]", True),
        (
            "if k in self.seen:\n        raise ValueError(self.seen[k])\n    self.seen[k] = self",
            False,
        ),  # a registry of what it was given: nothing computed is served back
        (
            "try:\n        return CACHE[k]\n    except KeyError:\n        v = CACHE[k] = g(k)\n"
            "        return v",
            True,
        ),
        # a value kept on an object, returned to every later call without computing it
        (
            "if k._type is not None:\n        return k._type\n    if g(k):\n"
            "        k._type = 'meta'\n    else:\n        k._type = 'class'\n    return k._type",
            True,
        ),
        ("if self._v is None:\n        self._v = g(k)\n    return self._v", True),
        ("if not hasattr(self, '_v'):\n        self._v = g(k)\n    return self._v", True),
        (
            "try:\n        return self._v\n    except AttributeError:\n        self._v = g(k)\n"
            "        return self._v",
            True,
        ),
        ("self._v = g(k)\n    return self._v", False),  # computed on every call
        ("if self._v is None:\n        self._v = g(k)", False),  # kept, never served
        ("if self.n > k:\n        return self.n\n    return g(k)", False),  # never stored
        # a lazily built module-level singleton
        (
            "global _v\n    if _v is None:\n        _v = g(k)\n        _v.setup()\n    return _v",
            True,
        ),
        ("global _v\n    _v = g(k)\n    return _v", False),  # rebuilt on every call
        ("if _v is None:\n        return g(k)\n    return _v", False),  # a global only read
    ],
)
def test_memo_functions_store_and_read_back_in_a_container_that_outlives_the_call(
    body: str, memo: bool
) -> None:
    regions = extract_regions("m.py", f"def f(self, ctx, k):\n    {body}\n")
    (fn,) = regions.functions()
    assert fn.memo is memo


@pytest.mark.parametrize(
    ("wrapper", "through"),
    [
        ("return f(*a)", True),
        ("if not a:\n            raise ValueError('x')\n        return f(*a)", True),
        ("if not a:\n            return None\n        return f(*a)", False),  # returns unseen
        ("result = f(*a)\n        return result", False),  # returns what it did not call here
        ("f(*a)", False),  # falls off the end
        ("yield f(*a)\n        return f(*a)", False),
    ],
)
def test_a_decorator_calls_through_when_every_return_calls_the_wrapped_function(
    wrapper: str, through: bool
) -> None:
    import ast

    from guard_adapters.python.decorators import calls_through

    tree = ast.parse(f"def deco(f):\n    def inner(*a):\n        {wrapper}\n    return inner\n")
    assert calls_through(tree.body[0]) is through  # type: ignore[arg-type]


def test_calls_in_a_test_expected_to_fail_are_value_reads() -> None:
    source = "@pytest.mark.xfail(raises=TypeError)\ndef test_x(d):\n    d.get(1, 2, 3)\n"
    (fn,) = extract_regions("t.py", source).functions()
    assert "get" in fn.attributes and "get()" not in fn.attributes


VERSIONED = """\
import sys

__all__ = ["batched", "LIMIT"]

LIMIT = 10


def _batched(items, n):
    return items


if sys.version_info >= (3, 12):
    def batched(items, n):
        return items
else:
    batched = _batched
    batched.__doc__ = _batched.__doc__

try:
    import json
except ImportError:
    json = None
"""


@pytest.mark.parametrize(
    ("old", "new", "names", "effects"),
    [
        # a version check or an ImportError fallback binds what its branches bind
        ("    batched = _batched\n", "    batched = list\n", ("pkg.m.batched",), False),
        ("    json = None\n", "    json = False\n", ("pkg.m.json",), False),
        # another condition or caught type picks another branch
        ("(3, 12):", "(3, 13):", ("pkg.m.batched",), True),
        ("except ImportError:", "except ModuleNotFoundError:", ("pkg.m.json",), True),
        ("if sys.version_info", "if probe() or sys.version_info", (), True),
        ("    json = None\n", "    json = None\n    LOG.append(1)\n", ("pkg.m.json",), True),
        # setting an attribute of a function the module defines binds that attribute
        (
            "batched.__doc__ = _batched.__doc__",
            "batched.__doc__ = 'x'",
            ("pkg.m.batched.__doc__",),
            False,
        ),
        ("    batched.__doc__ = _batched.__doc__", "    sys.__doc__ = 'x'", None, True),
        # a literal __all__ changes what star imports bind by the names it adds or drops
        ('["batched", "LIMIT"]', '["batched"]', ("pkg.m.LIMIT", "pkg.m.__all__"), False),
        ('["batched", "LIMIT"]', "[n for n in dir()]", ("pkg.m.__all__",), True),
        ('__all__ = ["batched", "LIMIT"]\n', "", ("pkg.m.__all__",), True),
    ],
)
def test_branches_attributes_and_exports_bind_names(
    old: str, new: str, names: tuple[str, ...] | None, effects: bool
) -> None:
    assert old in VERSIONED
    found = changes(VERSIONED, VERSIONED.replace(old, new, 1))["<module>"]
    if names is not None:
        assert set(names) <= set(found[3]), found
    assert found[4] is effects


def module_change(before: str, after: str) -> tuple[tuple[str, ...], bool, tuple[str, ...]]:
    """(names, side effects, removed names) of the module body's change."""
    old, new = extract_regions("pkg/m.py", before), extract_regions("pkg/m.py", after)
    found = {c.id: c for c in compare_modules(old, new, "pkg.m")}["pkg/m.py::<module>"]
    return found.names, found.side_effects, found.removed


def test_an_import_moved_under_type_checking_is_removed_at_run_time() -> None:
    base = "from pkg.models import User\n\n\nclass Admin(User):\n    pass\n"
    moved = base.replace(
        "from pkg.models import User\n",
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg.models import User\n",
    )
    _, effects, removed = module_change(base, moved)
    assert effects and "pkg.m.User" in removed


def test_an_all_that_names_what_the_module_does_not_bind_breaks_its_star_importers() -> None:
    base = "__all__ = ['alpha']\n\n\ndef alpha():\n    return 1\n"
    typo = base.replace("['alpha']", "['alpha', 'gama']") + "\n\ndef gamma():\n    return 2\n"
    assert module_change(base, typo)[1]
    fine = base.replace("['alpha']", "['alpha', 'gamma']") + "\n\ndef gamma():\n    return 2\n"
    assert not module_change(base, fine)[1]


def test_a_name_all_drops_is_removed_for_star_importers() -> None:
    base = "__all__ = ['alpha', 'beta']\n\n\ndef alpha():\n    pass\n\n\ndef beta():\n    pass\n"
    _, effects, removed = module_change(base, base.replace("'alpha', 'beta'", "'alpha'"))
    assert not effects and removed == ("pkg.m.beta",)


@pytest.mark.parametrize(
    "source",
    [
        "def pub():\n    pass\n\n\npub.boolean = True\n",  # read by code outside (admin)
        # a function that may be a C one: setting its docstring may fail
        "try:\n    from ._speedups import escape\nexcept ImportError:\n"
        "    def escape(s):\n        return s\n\n\nescape.__doc__ = 'True'\n",
    ],
)
def test_other_attributes_and_docstrings_of_imported_functions_stay_side_effects(
    source: str,
) -> None:
    assert module_change(source, source.replace("True", "False"))[1]


def test_a_class_a_decorator_may_register_is_flagged() -> None:
    def registers(before: str, after: str) -> dict[str, bool]:
        old, new = extract_regions("m.py", before), extract_regions("m.py", after)
        return {c.id.split("::")[1]: c.registers for c in compare_modules(old, new, "m")}

    factory = "def f(base):\n    {deco}class C(base):\n        x = {x}\n    return C\n"
    plain = registers(factory.format(deco="", x=1), factory.format(deco="", x=2))
    assert plain == {"f.<locals>.C.<body>": False}
    hooked = factory.format(deco="@hooks.add\n    ", x=1)
    assert registers(hooked, hooked.replace("x = 1", "x = 2")) == {"f.<locals>.C.<body>": True}
    marked = factory.format(deco="@final\n    ", x=1)
    assert registers(marked, marked.replace("x = 1", "x = 2")) == {"f.<locals>.C.<body>": False}


@pytest.mark.parametrize(
    ("source", "through_class"),
    [
        ("def f(x):\n    return type(x).p\n", True),
        ("def f(x):\n    return x.__class__.p\n", True),
        ("class C:\n    @classmethod\n    def f(cls):\n        return cls.p\n", True),
        ("class C:\n    def __init_subclass__(cls):\n        return cls.p\n", True),
        ("def f(x):\n    return x.p\n", False),
        ("class C:\n    def f(self):\n        return self.p\n", False),
    ],
)
def test_an_attribute_read_through_a_class_object_is_marked(
    source: str, through_class: bool
) -> None:
    """A property read through a class object is the property itself: no getter runs."""
    (fn,) = [r for r in extract_regions("m.py", source).functions()]
    assert "p" in fn.attributes
    assert ("p^" in fn.attributes) is through_class


@pytest.mark.parametrize(
    ("body", "read"),
    [
        ("return operator.attrgetter('limits.MAX')(x)", {"limits", "MAX"}),
        ("return operator.methodcaller('close')(x)", {"close"}),
        ("return '{0.MAX} of {x.unit[0]:{x.width}}'.format(x, x=x)", {"MAX", "unit", "width"}),
    ],
)
def test_attributes_named_in_string_literals_are_read(body: str, read: set[str]) -> None:
    """A name no attribute node spells: ``attrgetter``, ``methodcaller``, a format string."""
    (fn,) = extract_regions("m.py", f"import operator\n\n\ndef f(x):\n    {body}\n").functions()
    assert read <= fn.attributes

"""What a read names, through the file's scopes (the index's ``ast`` scope analysis): each
case is a read an edit of the named code must reach, or a name that must not be mistaken for
another."""

from __future__ import annotations

import sys

import pytest

from guard_adapters.index.index import index_file
from guard_adapters.pytest.layout import PytestLayout


def facts(source: str) -> tuple[dict[str, set[str]], dict[str, dict[str, float]]]:
    raw = index_file("pkg/m.py", source.encode(), "pkg.m", PytestLayout(), False)
    refs = {f.qualname: set(f.refs) for f in raw.file.functions}
    calls = {k.split("::")[1]: v for k, v in raw.calls.items()}
    return refs, calls


def test_imports_resolve_to_what_they_import_under_any_local_name() -> None:
    refs, calls = facts(
        "import os.path\nimport json as j\nfrom . import sibling\nfrom ..up import thing as t\n\n"
        "def f():\n    return os.path.join(j.dumps(1), sibling.X, t)\n"
    )
    assert {"os.path.join", "json.dumps", "pkg.sibling.X", "up.thing"} <= refs["f"]
    assert {"os.path.join", "json.dumps"} <= set(calls["f"])


def test_a_method_does_not_see_its_class_body_names_but_the_module_ones() -> None:
    refs, _ = facts(
        "LIMIT = 1\n\nclass C:\n    LIMIT = 2\n\n    def m(self):\n        return LIMIT\n"
    )
    assert "pkg.m.LIMIT" in refs["C.m"] and "pkg.m.C.LIMIT" not in refs["C.m"]
    refs, _ = facts("class C:\n    A = 1\n    B = A + 1\n")
    assert "pkg.m.C.A" in refs["C.<body>"]  # the class body itself does


def test_defaults_and_decorators_read_the_enclosing_scope_and_parameters_shadow() -> None:
    refs, _ = facts(
        "X = 1\nY = 2\n\ndef deco(f):\n    return f\n\n@deco\ndef f(X=Y):\n    return X\n"
    )
    assert {"pkg.m.deco", "pkg.m.Y"} <= refs["<module>"]  # run where f is defined
    assert "pkg.m.X" not in refs["f"]  # the parameter, not the module's X


def test_a_global_declaration_makes_a_functions_assignment_the_modules() -> None:
    refs, _ = facts(
        "def setup():\n    global STATE\n    STATE = 1\n\ndef use():\n    return STATE\n"
    )
    assert "pkg.m.STATE" in refs["use"]


def test_a_module_read_sees_only_the_assignments_before_it_a_function_sees_all() -> None:
    source = (
        "try:\n    import simplejson as json\nexcept ImportError:\n    json = None\n\n"
        "DUMP = json.dumps\n\ndef f():\n    return json.loads\n"
    )
    refs, _ = facts(source)
    assert {"simplejson.dumps", "pkg.m.json.dumps"} <= refs["<module>"]
    assert {"simplejson.loads", "pkg.m.json.loads"} <= refs["f"]


def test_a_comprehensions_first_iterable_is_read_outside_it() -> None:
    refs, _ = facts("items = [1]\n\ndef f(items):\n    return [i for i in items]\n")
    assert "pkg.m.items" not in refs["f"]  # the parameter
    refs, _ = facts("items = [1]\nOUT = [items for items in items]\n")
    assert "pkg.m.items" in refs["<module>"]


def test_names_a_star_import_may_bind_include_keywords_and_constants_read_as_names() -> None:
    refs, _ = facts("from pkg.base import *\n\ndef f():\n    return make(size=None)\n")
    assert {"pkg.base.make", "pkg.base.size", "pkg.base.None"} <= refs["f"]


def test_self_attribute_reads_and_calls_name_the_class_member() -> None:
    refs, calls = facts(
        "class C:\n    def a(self):\n        return self.b()\n\n    def b(self):\n        pass\n"
    )
    assert "pkg.m.C.b" in refs["C.a"]
    assert calls["C.a"]["pkg.m.C.b"] < 0.9  # a subclass may override it


@pytest.mark.skipif(sys.version_info < (3, 13), reason="type parameter defaults are 3.13 syntax")
def test_a_type_parameters_bound_and_default_are_reads() -> None:
    refs, _ = facts("from pkg.other import B, D\n\ndef f[T: B = D](x: T) -> T:\n    return x\n")
    assert {"pkg.other.B", "pkg.other.D"} <= refs["<module>"]


def test_an_import_by_a_literal_name_holds_that_module() -> None:
    refs, _ = facts(
        "import importlib\n\n"
        "def lit():\n    return importlib.import_module('pkg.plugins').HOOK\n\n"
        "def top():\n    return __import__('pkg.sub').sub.VALUE\n\n"
        "def computed(name):\n    return importlib.import_module(name).HOOK\n\n"
        "def relative():\n    return importlib.import_module('.plugins', 'pkg')\n"
    )
    assert "pkg.plugins" in refs["lit"]
    assert {"pkg.sub", "pkg"} <= refs["top"]
    assert not {r for r in refs["computed"] | refs["relative"] if r.startswith("pkg.")}
    raw = index_file("pkg/m.py", b"import importlib\nM = importlib.import_module('pkg.x')\n",
                     "pkg.m", PytestLayout(), False)  # fmt: skip
    assert "pkg.x" in raw.imports

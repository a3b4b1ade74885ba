"""Annotations that running code never evaluates read no name in the index; annotations that
may be evaluated (no ``from __future__ import annotations``, a decorator or class machinery
from outside) still do (libcst, no store)."""

from __future__ import annotations

from guard_adapters.libcst.index import index_file
from guard_adapters.pytest.layout import PytestLayout

LAZY = "from __future__ import annotations\n"
HEAD = "import typing as t\nfrom pkg.client import Client\nimport outside\n\n\n"


def refs(source: str) -> dict[str, set[str]]:
    raw = index_file("pkg/m.py", source.encode(), "pkg.m", PytestLayout(), False)
    return {f.qualname: set(f.refs) for f in raw.file.functions}


def test_string_annotations_of_a_repository_class_read_nothing_at_import() -> None:
    found = refs(
        LAZY + HEAD + "class App(dict):\n    client: type[Client] | None = None\n\n"
        "    def make(self, c: Client) -> Client:\n        return c\n"
    )
    assert "pkg.client.Client" not in found["App.<body>"]
    assert "pkg.client.Client" not in found["<module>"]


def test_evaluated_annotations_still_read() -> None:
    found = refs(
        HEAD + "class App(dict):\n    client: type[Client] | None = None\n\n"
        "    def make(self, c: Client) -> Client:\n        return c\n"
    )
    assert "pkg.client.Client" in found["App.<body>"]  # evaluated when the class is built


def test_a_class_built_by_outside_machinery_keeps_its_annotation_reads() -> None:
    for header in ("class M(outside.Model):", "class M(metaclass=outside.Meta):",
                   "@outside.register\nclass M:"):  # fmt: skip
        found = refs(LAZY + HEAD + header + "\n    client: Client\n")
        assert "pkg.client.Client" in found["M.<body>"], header


def test_an_outside_base_evaluates_field_annotations_not_method_signatures() -> None:
    body = "\n    client: Client\n\n    def make(self) -> Other:\n        pass\n"
    head = LAZY + HEAD + "from pkg.other import Other\n\n\n"
    found = refs(head + "class M(outside.Model):" + body)["M.<body>"]
    assert "pkg.client.Client" in found
    assert "pkg.other.Other" not in found
    found = refs(head + "class M(outside.Model, metaclass=outside.Meta):" + body)["M.<body>"]
    assert "pkg.other.Other" in found


def test_a_registering_decorator_keeps_a_functions_annotation_reads() -> None:
    found = refs(LAZY + HEAD + "@outside.route('/')\ndef view(c: Client) -> None:\n    pass\n")
    assert "pkg.client.Client" in found["<module>"]
    found = refs(LAZY + HEAD + "def view(c: Client) -> None:\n    pass\n")
    assert "pkg.client.Client" not in found["<module>"]


def test_a_local_variable_annotation_is_never_read() -> None:
    found = refs(HEAD + "def f():\n    x: Client = 1\n    return x\n")
    assert "pkg.client.Client" not in found["f"]

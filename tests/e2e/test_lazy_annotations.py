"""A class that names another only in string annotations (``from __future__ import
annotations``, the name imported under ``TYPE_CHECKING``) does not read it at import: a
decorator removed from a method of the named class selects the tests that use that method,
not every importer of the annotating module (precision issue, fresh class)."""

from __future__ import annotations

from pathlib import Path

from guard_core.api import Guard
from tests.e2e.conftest import edit

FILES = {
    "pkg/__init__.py": "",
    "pkg/client.py": (
        "from __future__ import annotations\n\n"
        "import json\nfrom contextlib import contextmanager\n\n\n"
        "class Client(json.JSONEncoder):  # open: derives from outside code\n"
        "    @contextmanager\n"
        "    def session(self):\n        yield {'user': 'x'}\n\n"
        "    def get(self, path):\n        return 'GET ' + path\n\n"
        "    def __enter__(self) -> Client:  # its own name, in a method's string annotation\n"
        "        return self\n"
    ),
    "pkg/app.py": (
        "from __future__ import annotations\n\n"
        "import typing as t\n\n"
        "if t.TYPE_CHECKING:\n    from pkg.client import Client\n\n\n"
        "class App:\n"
        "    client_class: type[Client] | None = None\n\n"
        "    def name(self) -> str:\n        return 'app'\n\n"
        "    def client(self) -> Client:\n"
        "        from pkg.client import Client\n\n"
        "        return (self.client_class or Client)()\n"
    ),
    "tests/__init__.py": "",
    "tests/test_app.py": (
        "import pkg.client  # every test's session imports it\n"
        "from pkg.app import App\n\n\n"
        "def test_session():\n"
        "    with App().client().session() as s:\n        assert s['user'] == 'x'\n\n\n"
        "def test_get():\n    assert App().client().get('/') == 'GET /'\n\n\n"
        "def test_name():\n    assert App().name() == 'app'\n"
    ),
}
T = "tests/test_app.py::"


def test_a_decorator_removed_from_a_class_named_in_string_annotations(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/client.py", "    @contextmanager\n", "")
    decision = guard.check()
    assert T + "test_session" in decision.tests
    assert T + "test_name" not in decision.tests, decision.reasons


def test_a_renamed_class_named_in_string_annotations_is_still_caught(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/client.py", "class Client(json", "class HttpClient(json")
    decision = guard.check()
    assert {T + "test_session", T + "test_get"} <= set(decision.tests)

"""The structural digest the import probe compares (guard_adapters.imports.state_digest): what
differs in state must differ in digest, whatever holds it."""

from __future__ import annotations

import array
import collections
import contextvars
import os
import random
import sys
import threading
import types
from pathlib import Path
from typing import Any

import pluggy
import pytest
from _pytest.config import PytestPluginManager

from guard_adapters.imports.state_digest import Digest


def digest(obj: object) -> str:
    return Digest(set()).of(obj)


class Node:
    def __init__(self, name: str, parent: Node | None = None, depth: int = 0) -> None:
        self.name, self.parent, self.depth, self.children = name, parent, depth, []
        if parent is not None:
            parent.children.append(self)


def tree(depth: int) -> tuple[Node, Node]:
    root = Node("root")
    return root, Node("child", root, depth)


def test_objects_on_a_cycle_each_cover_every_members_state() -> None:
    """The child is digested first and reaches the root while its own digest is pending:
    the root's digest must still see the child's state, and the child's the root's."""
    for first in ("child", "root"):
        digests = []
        for depth in (1, 2):
            root, child = tree(depth)
            d = Digest(set())
            order = [child, root] if first == "child" else [root, child]
            digests.append([d.of(o) for o in order])
        assert digests[0][0] != digests[1][0]
        assert digests[0][1] != digests[1][1]


def test_the_same_cyclic_state_digests_alike() -> None:
    assert [digest(o) for o in tree(1)] == [digest(o) for o in tree(1)]


@pytest.mark.parametrize(
    "one, other",
    [
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),  # iteration order is state
        (collections.defaultdict(list), collections.defaultdict(set)),
        (collections.deque([1, 2]), collections.deque([1, 3])),
        (random.Random(42), random.Random(43)),
        (array.array("i", [1, 2]), array.array("i", [1, 3])),
        ({1, 2}, {1, 3}),
        ((1, [2]), (1, [3])),
        (contextvars.ContextVar("v", default=1), contextvars.ContextVar("v", default=2)),
    ],
    ids=[
        "dict-order",
        "defaultdict-factory",
        "deque",
        "random-state",
        "buffer",
        "set",
        "nested",
        "contextvar-default",
    ],
)
def test_different_state_digests_differently(one: Any, other: Any) -> None:
    assert digest(one) != digest(other)


def test_a_proxy_is_read_through_its_own_storage() -> None:
    class Proxy:
        def __init__(self, name: str) -> None:
            self.name = name

        def __getattr__(self, attr: str) -> Any:
            raise RuntimeError("working outside of a context")

    d = Digest(set())
    assert d.of(Proxy("a")) != d.of(Proxy("b"))
    assert not d.unreadable


def test_a_c_object_that_shows_no_state_cannot_be_read_in_the_repositorys_state() -> None:
    class Opaque:
        __slots__ = ()

        def __repr__(self) -> str:
            return f"<Opaque at 0x{id(self):x}>"

    strict = Digest(set())
    strict.of(threading.Lock())
    assert not strict.unreadable  # a lock holds no data
    strict.of(Opaque())
    assert strict.unreadable


def plugin_manager(kind: type, *plugins: object) -> Any:
    manager = kind() if kind is PytestPluginManager else kind("app")
    for plugin in plugins:
        manager.register(plugin)  # an object without __name__: named by its address
    return manager


class Reporter:
    def __init__(self, started: float) -> None:
        self.started = started


def external() -> Digest:
    d = Digest(set())
    d.strict = False  # as dependencies' globals are read
    return d


def test_pytests_own_session_in_dependencies_state_digests_by_what_an_import_changes() -> None:
    """pytest's plug-in manager differs from one run to the next (addresses, start times):
    digested alike. A plug-in more differs."""
    same = [external().of(plugin_manager(PytestPluginManager, Reporter(t))) for t in (1.0, 2.0)]
    assert same[0] == same[1]
    more = plugin_manager(PytestPluginManager, Reporter(1.0), Node("x"))
    assert external().of(more) != same[0]


def test_a_plugin_manager_or_thread_of_the_repositorys_own_is_compared_whole() -> None:
    """Only pytest's own session is summed up, and only in dependencies' state: a
    repository's plug-in manager, a timer's interval, a thread's target still differ."""
    mine = [plugin_manager(pluggy.PluginManager, Reporter(t)) for t in (1.0, 2.0)]
    assert Digest(set()).of(mine[0]) != Digest(set()).of(mine[1])
    d = external()
    assert d.of(threading.Timer(60, print)) != d.of(threading.Timer(1, print))
    one, other = (threading.Thread(target=print, name="w") for _ in range(2))
    assert d.of(one) == d.of(other)
    assert d.of(one) != d.of(threading.Thread(target=repr, name="w"))
    table = {1: one}
    assert d.global_of("threading", "_active", table) == d.global_of(
        "threading", "_active", {2: other}
    )  # keyed by idents
    assert d.global_of("threading", "_active", table) != d.global_of(
        "threading", "_active", {1: one, 2: other}
    )


def load(path: Any, text: str) -> dict[str, Any]:
    path.write_text(text)
    namespace: dict[str, Any] = {"__name__": "pkgx"}
    exec(compile(text, str(path), "exec", dont_inherit=True), namespace)  # as imports compile
    return namespace


def test_same_named_definitions_digest_apart_and_a_moved_one_alike(tmp_path: Any) -> None:
    """The branches of an ``if`` define one name twice: the one bound is told apart from the
    other though name, defaults and closure are alike; lines moved by an edit above are not
    a difference."""
    text = (
        "def make(flag):\n    if flag:\n        def step():\n            return 1\n"
        "    else:\n        def step():\n            return 2\n    return step\n"
        "up, down = make(True), make(False)\n"
        "one, two = (lambda: 1), (lambda: 2)\n"
    )
    names = ("up", "down", "one", "two")
    first = load(tmp_path / "a.py", text)
    d = Digest(set())
    digests = [d.of(first[k]) for k in names]
    assert digests[0] != digests[1]
    assert digests[2] != digests[3]
    moved = load(tmp_path / "a.py", "\n\n# moved\n" + text)
    assert digests == [Digest(set()).of(moved[k]) for k in names]


def test_a_wrapper_is_told_by_its_own_code_not_by_the_names_it_copied(tmp_path: Any) -> None:
    """``functools.wraps`` copies the wrapped function's names onto either wrapper."""
    ns = load(
        tmp_path / "w.py",
        "import functools\n\n\ndef plus(f):\n    @functools.wraps(f)\n"
        "    def wrapper():\n        return f() + 1\n    return wrapper\n\n\n"
        "def minus(f):\n    @functools.wraps(f)\n"
        "    def wrapper():\n        return f() - 1\n    return wrapper\n\n\n"
        "def base():\n    return 0\n\n\nup, down = plus(base), minus(base)\n",
    )
    assert Digest(set()).of(ns["up"]) != Digest(set()).of(ns["down"])


def test_the_text_an_import_was_served_is_the_one_read(tmp_path: Any) -> None:
    """The base's import reads the base's text (the overlay), not the working tree's."""
    path = tmp_path / "a.py"
    old = "if True:\n    def f():\n        return 1\nelse:\n    def f():\n        return 2\n"
    f = load(path, old)["f"]
    path.write_text("def f():\n    return 1\n")  # the working tree has one definition only
    assert Digest(set(), {str(path.resolve()): old.encode()}).of(f) != Digest(set()).of(f)


def test_a_subclass_built_by_a_function_is_part_of_its_bases_state(tmp_path: Any) -> None:
    """Bound by no name, it is found through the base (``__subclasses__``): its members are
    the base's state."""
    digests = []
    for size in (1, 2):
        ns = load(
            tmp_path / f"s{size}.py",
            "class Base:\n    pass\n\n\ndef build(n):\n"
            "    class Sub(Base):\n        SIZE = n\n    return Sub\n\n\n"
            f"build({size})\n",
        )
        digests.append(Digest({"pkgx"}).of(ns["Base"]))
    assert digests[0] != digests[1]


@pytest.mark.parametrize("name", ["compute", "área"])
def test_the_definition_bound_is_told_by_its_code_wherever_the_others_are(
    tmp_path: Any, name: str
) -> None:
    """A definition added above shifts the order of the others: the one the flag binds is
    still told apart from the one it bound before (any identifier the compiler accepts)."""
    old = (
        'MODE = "b"\n'
        f'if MODE == "a":\n    def {name}():\n        return 1\n'
        f"else:\n    def {name}():\n        return 2\n"
    )
    new = (
        'MODE = "a"\n'
        f'if MODE == "c":\n    def {name}():\n        return 3\n'
        f'elif MODE == "a":\n    def {name}():\n        return 1\n'
        f"else:\n    def {name}():\n        return 2\n"
    )
    before = Digest(set()).of(load(tmp_path / "m.py", old)[name])
    assert Digest(set()).of(load(tmp_path / "m.py", new)[name]) != before


def test_a_subclass_built_by_type_is_part_of_its_bases_state(tmp_path: Any) -> None:
    digests = [
        Digest({"pkgx"}).of(
            load(
                tmp_path / f"t{size}.py",
                f"class Base:\n    pass\n\n\ntype('Sub', (Base,), {{'SIZE': {size}}})\n",
            )["Base"]
        )
        for size in (1, 2)
    ]
    assert digests[0] != digests[1]


def test_what_a_dependency_draws_or_reads_per_process_digests_alike_and_nothing_else() -> None:
    """multiprocessing's authentication key is random per process, a ``pid`` global is the
    process's id: alike in any import. A constant that happens to equal the id is a value."""
    from multiprocessing.process import AuthenticationString

    d = external()
    keys = [AuthenticationString(os.urandom(32)) for _ in "ab"]
    assert d.of(keys[0]) == d.of(keys[1])
    assert d.global_of("execnet.gateway_base", "pid", os.getpid()) == "this process's id"
    constant = d.global_of("sqlite3", "SQLITE_IOERR_SHMSIZE", os.getpid())
    assert constant == Digest(set()).of(os.getpid())
    assert Digest(set()).of(keys[0]) != Digest(set()).of(keys[1])  # the repository's: whole


def test_a_dependencys_copy_of_a_loaded_module_leaves_out_the_originals_values(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """coverage.py keeps copies of ``os`` and ``sys`` (``isolate_module``) that share the
    original's values: those are compared where the original's globals are, each by its
    name (``sys.path_importer_cache`` lists directories as they are when looked at, a cache
    left out there; ``sys.meta_path`` holds pytest's rewriter). What the copy holds of its own
    is its state (a table under a cache's name too), and a copy in the repository's own state
    is compared whole."""
    from coverage.misc import isolate_module

    copy = isolate_module(sys)
    before, whole = external().of(copy), Digest(set()).of(copy)
    monkeypatch.setitem(sys.path_importer_cache, str(tmp_path), None)
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, object()])
    monkeypatch.setattr(copy, "meta_path", sys.meta_path)
    assert external().of(copy) == before
    assert Digest(set()).of(copy) != whole
    monkeypatch.setattr(copy, "dont_write_bytecode", not sys.dont_write_bytecode)
    assert external().of(copy) != before
    # a table of the copy's own under a cache's name (a namespace that only shares the name)
    tables = [{**sys.path_importer_cache, name: None} for name in ("a", "b")]
    own = []
    for table in tables:
        monkeypatch.setattr(copy, "path_importer_cache", table)
        own.append(external().of(copy))
    assert own[0] != own[1]


def test_what_a_c_base_keeps_besides_the_instance_dict_is_state() -> None:
    """An SSL context's settings, a socket's timeout and an in-memory file's content are kept
    in C, not in the instance's ``__dict__``: each difference is one, and alike objects digest
    alike."""
    import io
    import socket
    import ssl

    def context(version: ssl.TLSVersion) -> ssl.SSLContext:
        ctx = ssl.create_default_context()
        ctx.minimum_version = version
        return ctx

    def of(obj: object) -> str:
        return Digest(set()).of(obj)

    tls12, tls13 = ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3
    assert of(context(tls12)) == of(context(tls12))
    assert of(context(tls12)) != of(context(tls13))
    with socket.socket() as plain, socket.socket() as alike, socket.socket() as timed:
        timed.settimeout(0.5)
        assert of(plain) == of(alike)
        assert of(plain) != of(timed)
    assert of(io.StringIO("a")) == of(io.StringIO("a"))
    assert of(io.StringIO("a")) != of(io.StringIO("zzz"))


def test_process_settings_an_import_can_change_are_state() -> None:
    """The socket module's default timeout, the umask and the int-to-str digit limit live in
    the process, in no module's globals."""
    import socket

    from guard_adapters.imports.loaded_state import process_state

    before = process_state(Digest(set()))
    socket.setdefaulttimeout(7.0)
    umask = os.umask(0o077)
    try:
        changed = process_state(Digest(set()))
    finally:
        socket.setdefaulttimeout(None)
        os.umask(umask)
    assert changed["socket timeout"] != before["socket timeout"]
    assert changed["umask"] != before["umask"]
    assert process_state(Digest(set())) == before
    if hasattr(sys, "set_int_max_str_digits"):
        digits = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(digits + 1000)
        try:
            assert process_state(Digest(set()))["int digits"] != before["int digits"]
        finally:
            sys.set_int_max_str_digits(digits)


def _super_caller(tmp_path: Any, monkeypatch: Any, text: str, get: str) -> str:
    """The digest of ``get`` (a dotted path in the module) once ``text`` is imported as the
    repository module ``pkgsup`` from one file."""
    path = tmp_path / "pkgsup.py"
    path.write_text(text)
    module = types.ModuleType("pkgsup")
    module.__file__ = str(path)
    monkeypatch.setitem(sys.modules, "pkgsup", module)
    exec(compile(text, str(path), "exec", dont_inherit=True), module.__dict__)
    found: Any = module
    for part in get.split("."):
        found = getattr(found, part)
    return Digest({"pkgsup"}).of(found)


BOUND = "class C(dict):\n    LIMIT = {n}\n\n    def __init__(self):\n        super().__init__()\n"
BUILT = (
    "def build():\n"
    "    class C(dict):\n        LIMIT = {n}\n\n"
    "        def __init__(self):\n            super().__init__()\n\n"
    "    return C\n\n\nBuilt = build()\n"
)


@pytest.mark.parametrize(
    ("text", "get", "alike"),
    [(BOUND, "C.__init__", True), (BUILT, "Built.__init__", False)],
    ids=["bound-by-name", "built-by-a-function"],
)
def test_a_super_callers_class_cell_is_its_class_by_name_where_it_is_compared_apart(
    tmp_path: Any, monkeypatch: Any, text: str, get: str, alike: bool
) -> None:
    """A method that calls ``super()`` closes over its class. A class bound by its name is
    compared there member by member: a change to another of its members is not a change to
    every ``super()`` caller. A class bound by no name is compared nowhere else: whole."""
    one, two = (_super_caller(tmp_path, monkeypatch, text.format(n=n), get) for n in (1, 2))
    assert (one == two) is alike


def test_which_test_modules_pytests_rewriter_rewrote_is_no_state_what_an_import_asks_is() -> None:
    """The probe serves the base's text of a changed test module past pytest's assertion
    rewriter, so the two sides' rewriters differ in the modules they rewrote: no state. A
    ``register_assert_rewrite`` an import made is."""
    from _pytest.assertion.rewrite import AssertionRewritingHook

    class Ini:  # a configuration without pytest's ini: the rewriter's default patterns
        def getini(self, name: str) -> Any:
            raise ValueError(name)

    config: Any = Ini()
    hooks = [AssertionRewritingHook(config) for _ in range(3)]
    hooks[1]._rewritten_names["test_cli"] = Path("tests/test_cli.py")
    hooks[1]._marked_for_rewrite_cache["test_cli"] = True
    hooks[2].mark_rewrite("pkg.helpers")
    one, rewrote, registered = (external().of(h) for h in hooks)
    assert one == rewrote
    assert one != registered

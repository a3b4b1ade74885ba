"""A hostile graph store: closed, malformed URL, not Redis, silent, killed mid-run, empty.
Every read-only answer is run-all (or a short exit-2 error) within 10 s, `guard run` then runs
the whole suite, and run-all's `tests` is something a consumer can follow."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.hostile.conftest import Sample
from tests.hostile.harness import (
    SUITE,
    C,
    assert_clear_error,
    assert_error_or_wider,
    assert_no_traceback,
    assert_wider,
    replace,
    summary,
    unique_graph,
    write,
)

ANSWER_WITHIN_S = 10.0
MUL = [C + "test_mul", C + "test_mul_param"]
NEW = "tests/test_new.py::test_new_fails"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FakeServer:
    """A TCP server on localhost that answers every connection with ``reply`` (bytes, or None:
    accept and never answer)."""

    def __init__(self, reply: bytes | None) -> None:
        self.reply = reply
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.held: list[socket.socket] = []
        self.stopped = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            self.held.append(conn)
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while not self.stopped.is_set():
                conn.settimeout(0.5)
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    return
                if self.reply is not None:
                    conn.sendall(self.reply)

    def close(self) -> None:
        self.stopped.set()
        for conn in [self.listener, *self.held]:
            with contextlib.suppress(OSError):
                conn.close()


class KillingProxy:
    """Forwards to the real FalkorDB, then dies (every connection closed, the port shut) once
    clients have sent ``after`` messages: a server killed in the middle of a command."""

    def __init__(self, url: str, after: int) -> None:
        self.target = urlparse(url)
        self.after = after
        self.sent = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.sockets: list[socket.socket] = []
        self.dead = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _upstream(self) -> socket.socket:
        if self.target.scheme == "unix":
            s = socket.socket(socket.AF_UNIX)
            s.connect(self.target.path)
            return s
        return socket.create_connection((self.target.hostname, self.target.port or 6379))

    def _serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self.dead.is_set():
            try:
                client, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            upstream = self._upstream()
            self.sockets += [client, upstream]
            for a, b, counted in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pump, args=(a, b, counted), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, counted: bool) -> None:
        with contextlib.suppress(OSError):
            while not self.dead.is_set():
                data = src.recv(65536)
                if not data:
                    return
                if counted:
                    with self.lock:
                        self.sent += 1
                        if self.sent > self.after:
                            self.kill()
                            return
                dst.sendall(data)

    def kill(self) -> None:
        self.dead.set()
        for s in [self.listener, *self.sockets]:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()


@contextlib.contextmanager
def store_url(kind: str, sample: Sample) -> Iterator[str]:
    if kind == "closed-port":
        yield f"redis://127.0.0.1:{free_port()}"
    elif kind.startswith("malformed:"):
        yield kind.split(":", 1)[1]
    elif kind in ("not-redis-http", "not-redis-binary", "not-redis-ok-forever", "silent"):
        reply = {
            "not-redis-http": b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
            "not-redis-binary": bytes(range(256)),
            "not-redis-ok-forever": b"+OK\r\n",
            "silent": None,
        }[kind]
        server = FakeServer(reply)
        try:
            yield f"redis://127.0.0.1:{server.port}"
        finally:
            server.close()
    elif kind.startswith("killed-after-"):
        proxy = KillingProxy(sample.url, int(kind.rsplit("-", 1)[1]))
        try:
            yield f"redis://127.0.0.1:{proxy.port}"
        finally:
            proxy.kill()
    else:  # pragma: no cover
        raise AssertionError(kind)


KINDS = [
    "closed-port",
    "malformed:not a url",
    "malformed:redis://",
    "malformed:redis://127.0.0.1:notaport",
    "malformed:ftp://127.0.0.1:21",
    "malformed:redis://[::1",
    "not-redis-http",
    "not-redis-binary",
    "not-redis-ok-forever",
    "silent",
    "killed-after-1",
    "killed-after-3",
    "killed-after-6",
]


# evidence per commit (team mode, 8 bases) reads the store differently only once it answers:
# a store that cannot be reached or spoken to fails alike in both modes
ANSWERING = {"not-redis-ok-forever", "killed-after-1", "killed-after-3", "killed-after-6"}
STORE_CASES = [(kind, "1") for kind in KINDS] + [(kind, "8") for kind in KINDS if kind in ANSWERING]


@pytest.mark.parametrize(("kind", "bases"), STORE_CASES)
def test_unusable_store_check_is_run_all_in_time(sample: Sample, kind: str, bases: str) -> None:
    replace(sample.repo, "pkg/core.py", "return a * b", "return a * b + 1")
    write(sample.repo, "tests/test_new.py", "def test_new_fails():\n    assert 1 + 1 == 3\n")
    with store_url(kind, sample) as url:
        env = {"GUARD_FALKORDB_URL": url, "GUARD_EVIDENCE_BASES": bases}
        out = sample.guard(
            "check", "--repo", str(sample.repo), "--json", env=env, timeout=ANSWER_WITHIN_S + 5
        )
        assert_no_traceback(out)
        assert out.elapsed_s <= ANSWER_WITHIN_S, out.describe()
        if kind.startswith("malformed:") and out.returncode == 2:
            assert_clear_error(out)  # a URL that cannot be a store is a configuration error
        else:
            assert out.returncode == 0, out.describe()
            decision = out.json()
            if not kind.startswith("killed-after-"):
                assert decision["level"] == "run-all", summary(decision)
            assert_wider(decision, [*MUL, NEW], [*SUITE, NEW])
        run = sample.guard("run", "--repo", str(sample.repo), env=env, timeout=60)
        assert_no_traceback(run, guard_frames_only=True)
        assert run.returncode != 0, "false pass\n" + run.describe()


COMMANDS = {
    "stats": ("stats", "--json"),
    "callers": ("callers", "pkg/core.py::mul"),
    "covering-tests": ("covering-tests", "pkg/core.py::mul"),
    "feedback": ("feedback", "--function", "pkg/core.py::mul", "--test", C + "test_add"),
}
QUERY_CASES = [
    *[(k, c) for k in ("closed-port", "malformed:not a url", "not-redis-http") for c in COMMANDS],
    ("silent", "stats"),
    ("silent", "feedback"),
]


@pytest.mark.parametrize(("kind", "name"), QUERY_CASES)
def test_unusable_store_queries_are_clear_errors(sample: Sample, kind: str, name: str) -> None:
    command = COMMANDS[name]
    with store_url(kind, sample) as url:
        out = sample.guard(
            command[0], "--repo", str(sample.repo), *command[1:],
            env={"GUARD_FALKORDB_URL": url}, timeout=ANSWER_WITHIN_S + 5,
        )  # fmt: skip
    assert out.elapsed_s <= ANSWER_WITHIN_S, out.describe()
    assert_clear_error(out)
    sample.assert_graph_unchanged()


def test_graph_never_ingested_is_run_all_with_every_test(sample: Sample) -> None:
    replace(sample.repo, "pkg/core.py", "return a * b", "return a * b + 1")
    write(sample.repo, "tests/test_new.py", "def test_new_fails():\n    assert 1 + 1 == 3\n")
    env = {"GUARD_GRAPH": unique_graph("empty")}
    decision = sample.check(env=env, suite=[*SUITE, NEW])
    assert decision["level"] == "run-all", summary(decision)
    assert_wider(decision, [*MUL, NEW], [*SUITE, NEW])
    sample.assert_run_fails(env=env)


@pytest.mark.parametrize(
    "graph", ["x'}) MATCH (n) DETACH DELETE n //", 'a"b\\c', "名前 with space", "-rf"]
)
def test_hostile_graph_name(sample: Sample, graph: str) -> None:
    replace(sample.repo, "pkg/core.py", "return a * b", "return a * b + 1")
    out = sample.guard("check", "--repo", str(sample.repo), "--json", env={"GUARD_GRAPH": graph})
    assert_error_or_wider(out, MUL, SUITE)
    sample.assert_graph_unchanged()  # the sample's own graph is untouched


def test_store_unreachable_leaves_the_tree_alone(sample: Sample, tmp_path: Path) -> None:
    """guard run on an unreachable store runs the whole suite and still leaves no trace."""
    replace(sample.repo, "pkg/helpers.py", "return x * 2", "return x * 2 + 0")  # passes
    env = {"GUARD_FALKORDB_URL": f"redis://127.0.0.1:{free_port()}"}
    run = sample.guard("run", "--repo", str(sample.repo), env=env, timeout=60)
    assert_no_traceback(run, guard_frames_only=True)
    assert run.returncode == 0, run.describe()
    assert "20 passed" in run.stdout, "the whole suite did not run\n" + run.describe()

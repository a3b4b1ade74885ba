"""The import probe: ``state_digest.py`` run twice in the target's interpreter, once with the
changed files served as the base commit had them and once as they are, and the two states
compared. Anything it cannot compare, or any difference outside the repository's own modules,
makes the answer unknown (``changed`` None): the importers stay selected."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Collection, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from guard_adapters.git.diff import read_at
from guard_adapters.imports.kept import KeptImports
from guard_adapters.pytest.import_labels import labelled_on_import
from guard_adapters.pytest.projects import subprojects
from guard_adapters.pytest.runner import plugins_path
from guard_adapters.python.modules import module_name
from guard_core.logs import get_logger
from guard_core.model import ChangeSet, FileKind
from guard_core.ports import ImportState

log = get_logger("guard.imports")

TIMEOUT_S = 60.0
Result = dict[str, Any]
Job = tuple[str, str, dict[str, str]]  # a project, the import's name, the files it is served
OUTSIDE = "outside the repository"  # what the digest says of a module imported from elsewhere


class SubprocessImportProbe:
    """An :class:`~guard_core.ports.ImportProbe` that imports in child processes of
    ``python``; answers are kept per working-tree state for the life of the object, the
    base's imports in ``kept`` too (a folder) for later processes."""

    def __init__(
        self,
        repo: Path,
        python: str | None,
        pytest_args: Sequence[str] = (),
        timeout: float = TIMEOUT_S,
        kept: Path | None = None,
    ) -> None:
        self.repo = repo
        self.python = python
        self.pytest_args = tuple(pytest_args)
        self.timeout = timeout
        self._answers: dict[str, ImportState] = {}
        self._kept = KeptImports(kept)
        self._noisy: set[str] = set()  # projects (and environments) whose imports differ

    def compare(self, change: ChangeSet, files: Sequence[str]) -> ImportState:
        why = self._unprobeable(change)
        if why:
            return ImportState(None, why)
        try:
            key = self._key(change, files)
            if key not in self._answers:
                answer = self._compare(change, files)
                if self._key(change, files) != key:  # the import read what is no longer there
                    return ImportState(None, "the changed files were saved while imported")
                self._answers[key] = answer
            return self._answers[key]
        except Exception as exc:  # the importers stay selected, never fewer
            log.warning("import_probe_failed", error=repr(exc))
            return ImportState(None, f"the import probe failed: {exc}")

    def _unprobeable(self, change: ChangeSet) -> str | None:
        if not self.python or not Path(self.python).exists():
            return "no interpreter to import the modules with"
        for f in change.files:
            if f.kind is not FileKind.MODIFIED:
                return f"{f.path} was {f.kind.value}: the modules to import differ"
            if not f.path.endswith(".py") or f.binary:
                return f"{f.path} changed and an import may read it"
        return None

    def _key(self, change: ChangeSet, files: Sequence[str]) -> str:
        h = hashlib.sha256(json.dumps([change.base, sorted(os.environ.items())]).encode())
        for f in sorted(change.files, key=lambda f: f.path):
            h.update(f.path.encode() + b"\0" + (self.repo / f.path).read_bytes() + b"\0")
        h.update("\0".join(sorted(files)).encode())
        return h.hexdigest()

    def _compare(self, change: ChangeSet, files: Sequence[str]) -> ImportState:
        modules = self._modules(files)
        if not modules:
            return ImportState(frozenset(), "no repository module was imported by the tests")
        base_bytes = {f.path: read_at(self.repo, change.base, f.path) for f in change.files}
        old_sources = {
            str(self.repo / path): base64.b64encode(data).decode("ascii")
            for path, data in base_bytes.items()
        }
        roots = _roots(modules.items())
        projects = ("", *subprojects(self.repo))  # each with its folder and configuration
        environment = [sorted(os.environ.items()), self._installed]
        # the base's import is the same whichever files changed: it reads every file as the
        # base has it (the diff holds every other change), so a check reuses an earlier one's
        served = self._served_digest(base_bytes, modules.values())
        base_keys = {
            p: json.dumps([str(self.repo / p), change.base, modules, environment, served])
            for p in projects
        }
        kept = {p: self._kept.run(base_keys[p]) for p in projects}
        noise_keys = {p: json.dumps([p, environment]) for p in projects}
        with tempfile.TemporaryDirectory(prefix="guard-imports-") as tmp:
            run = functools.partial(self._run_all, Path(tmp), modules, roots)
            # a second import of each side tells what differs from one import to the next (a
            # start time, a process id); started at once where the last check needed them
            jobs: list[Job] = [(p, "new", {}) for p in projects]
            for p in projects:
                if kept[p] is None:
                    jobs.append((p, "old", old_sources))
                if noise_keys[p] in self._noisy:
                    jobs += self._agains(p, base_keys[p], old_sources, kept[p] is None)
            first = run(jobs)
            news = {p: first[(p, "new")] for p in projects}
            olds = {p: first.get((p, "old")) or kept[p] or {} for p in projects}
            late = [
                j
                for p in projects
                if (p, "again") not in first and outside_differences(olds[p], news[p])
                for j in self._agains(p, base_keys[p], old_sources, (p, "old") in first)
            ]
            agains = {**first, **run(late)}
            olds = {p: agains.get((p, "old")) or olds[p] for p in projects}
        if self._served_digest(base_bytes, modules.values()) != served:
            # a module saved while imported: what the base's import read is not the base
            return ImportState(None, "a module was saved while the base was imported")
        noise: dict[str, set[str]] = {}
        for p in projects:
            base_noise = self._kept.noise(base_keys[p])
            if (p, "old-again") in agains:
                base_noise = outside_differences(olds[p], agains[(p, "old-again")])
            if (p, "old") in agains:
                self._kept.keep(base_keys[p], olds[p], base_noise)
            if (p, "again") in agains:
                # a value that varies on both sides: what varies on one side only is the change
                new_noise = outside_differences(news[p], agains[(p, "again")])
                noise[p] = new_noise & (base_noise or set())
                if new_noise or base_noise:
                    self._noisy.add(noise_keys[p])
        changed = frozenset(os.path.realpath(self.repo / f.path) for f in change.files)
        return merge_states(
            [compare_states(olds[p], news[p], noise.get(p, ()), changed) for p in projects]
        )

    def _agains(
        self, project: str, base_key: str, old_sources: dict[str, str], old_now: bool
    ) -> list[Job]:
        """A second import of the working tree; and unless what varies in the base's is kept,
        two of the base in this check (``old_now``: one is already): what differs between
        imports apart in time (a package installed between) is no noise."""
        again: list[Job] = [(project, "again", {})]
        if self._kept.noise(base_key) is None:
            again.append((project, "old-again", old_sources))
            if not old_now:
                again.append((project, "old", old_sources))
        return again

    @functools.cached_property
    def _installed(self) -> list[Any]:
        """The interpreter, the times of the folders on its path (installing or removing a
        package changes one) and the probe's own code: a base's import kept on disk is one of
        this environment, digested alike."""
        out = subprocess.run(
            [str(self.python), "-c", "import json, sys; print(json.dumps(sys.path))"],
            cwd=self.repo, capture_output=True, text=True, timeout=self.timeout, check=True,
        )  # fmt: skip
        folders = [p for p in json.loads(out.stdout) if p and os.path.isdir(p)]
        times = [(p, os.stat(p).st_mtime_ns) for p in folders]
        return [str(self.python), self.pytest_args, times, _probe_code()]

    def _served_digest(self, base_bytes: dict[str, bytes], paths: Collection[str]) -> str:
        """The bytes the base's import is served: the base's for the changed files, the disk's
        for the other modules (the same as the base's unless the diff missed a file)."""
        h = hashlib.sha256()
        for path in sorted({*paths, *base_bytes}):
            data = base_bytes.get(path)
            if data is None:
                file = self.repo / path
                data = file.read_bytes() if file.is_file() else b"\0missing"
            h.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
        return h.hexdigest()

    def _run_all(
        self,
        tmp: Path,
        modules: dict[str, str],
        roots: list[str],
        jobs: list[Job],
    ) -> dict[tuple[str, str], Result]:
        """Each (project, name, overlay) import, as many at once as there are cores."""
        results: dict[tuple[str, str], Result] = {}
        width = max(2, os.cpu_count() or 1)
        for at in range(0, len(jobs), width):
            batch = jobs[at : at + width]
            started: list[tuple[subprocess.Popen[bytes], Path]] = []
            try:
                for i, (project, name, overlay) in enumerate(batch):
                    started.append(
                        self._start(tmp, project, f"{name}-{i + at}", modules, roots, overlay)
                    )
                for (project, name, _), (proc, out) in zip(batch, started, strict=True):
                    results[(project, name)] = self._finish(proc, out)
            finally:  # one that failed leaves no other running
                for proc, _ in started:
                    if proc.poll() is None:
                        _kill(proc)
        return results

    def _modules(self, files: Sequence[str]) -> dict[str, str]:
        """Module name -> path, for the files the collector labels as imports."""
        out = {}
        for path in files:
            name = module_name(self.repo, path) if labelled_on_import(path) else None
            if name:
                out[name] = path
        return out

    def _start(
        self,
        tmp: Path,
        project: str,
        name: str,
        modules: dict[str, str],
        roots: list[str],
        overlay: dict[str, str],
    ) -> tuple[subprocess.Popen[bytes], Path]:
        """pytest collecting the suite with the probe plug-in, as the ingest ran it."""
        request = tmp / f"{name}.json"
        result = tmp / f"{name}-out.json"
        request.write_text(
            json.dumps(
                {
                    "root": str(self.repo),
                    "sys_path": [str(self.repo / r) if r else str(self.repo) for r in roots],
                    "modules": sorted(modules),
                    "paths": modules,
                    "overlay": overlay,
                }
            ),
            encoding="utf-8",
        )
        env = {
            **os.environ,
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": plugins_path(),
            "GUARD_PROBE_REQUEST": str(request),
            "GUARD_PROBE_OUT": str(result),
        }
        cmd = [
            str(self.python), "-m", "pytest", "-p", "guard_adapters.imports.pytest_probe",
            "-p", "no:cacheprovider", "--collect-only", "-q", "--no-header", *self.pytest_args,
        ]  # fmt: skip
        proc = subprocess.Popen(
            cmd,
            cwd=self.repo / project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # what the import starts is stopped with it
        )
        return proc, result

    def _finish(self, proc: subprocess.Popen[bytes], result: Path) -> Result:
        try:
            _, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise RuntimeError(f"importing took over {self.timeout:.0f}s") from None
        if not result.is_file():  # pytest's own exit code says nothing of the probe's
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(f"pytest exited {proc.returncode} before collecting: {tail[0]}")
        loaded: Result = json.loads(result.read_text(encoding="utf-8"))
        return loaded


@functools.cache
def _probe_code() -> str:
    h = hashlib.sha256()
    for file in sorted(Path(__file__).parent.glob("*.py")):
        h.update(file.read_bytes())
    return h.hexdigest()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.communicate()


def _roots(modules: Any) -> list[str]:
    """The folders the modules are imported from (``src`` for ``src/pkg/mod.py``)."""
    roots: list[str] = []
    for name, path in modules:
        p = PurePosixPath(path)
        depth = name.count(".") + (1 if p.stem == "__init__" else 0)
        root = str(p.parents[depth]) if depth < len(p.parents) else ""
        root = "" if root == "." else root
        if root not in roots:
            roots.append(root)
    return roots


def outside_differences(old: Result, new: Result) -> set[str]:
    """What differs outside the repository's globals: a dependency's global, process state."""
    return {
        f"{kind} {k}"
        for kind in ("external", "process")
        for k in old[kind].keys() | new[kind].keys()
        if old[kind].get(k) != new[kind].get(k)
    }


def merge_states(states: Sequence[ImportState]) -> ImportState:
    """Several pytest projects' comparisons as one: unknown if any is, else what any saw."""
    for state in states:
        if state.changed is None:
            return state
    ran = [s.ran for s in states]
    lines: dict[str, frozenset[int]] = {}
    for state in states:
        for path, seen in state.lines.items():
            lines[path] = lines.get(path, frozenset()) | seen
    return ImportState(
        frozenset().union(*(s.changed or () for s in states)),
        "; ".join(s.detail for s in states),
        None if any(r is None for r in ran) else frozenset().union(*(r or () for r in ran)),
        lines,
    )


def compare_states(
    old: Result, new: Result, noise: Collection[str] = (), served: Collection[str] = ()
) -> ImportState:
    """The names whose state differs, or None with the reason when anything but the
    repository's own module globals differs, apart from ``noise``: what differs between two
    imports of the same code, on both sides (a start time, a thread id). ``served``: the
    changed files, whose base text the base's import got past pytest's rewriter."""
    if old["errors"] != new["errors"]:
        failing = sorted(set(old["errors"].items()) ^ set(new["errors"].items()))
        return ImportState(None, f"importing {failing[0][0]} fails now, or fails otherwise")
    # a module failing alike before and after (a test expects it to) replays up to its error:
    # its body does not count as run; one imported from elsewhere replays nothing
    elsewhere = sorted(m for m, error in old["errors"].items() if OUTSIDE in error)
    if elsewhere:
        return ImportState(None, f"importing {elsewhere[0]} {old['errors'][elsewhere[0]]}")
    if old.get("spawned") or new.get("spawned"):
        return ImportState(None, "the import starts a process, which reads the working tree")
    unserved = sorted({*old.get("unserved", ()), *new.get("unserved", ())})
    if unserved:
        return ImportState(None, f"{unserved[0]} is run or read by path: served no base text")
    unreadable = sorted({*old.get("unreadable", ()), *new.get("unreadable", ())})
    if unreadable:
        return ImportState(None, f"a {unreadable[0]} built at import cannot be read")
    if old["state"].keys() != new["state"].keys() or old["outside"] != new["outside"]:
        return ImportState(None, "the change imports other modules")
    rewritten = [set(side.get("rewritten", ())) - set(served) for side in (old, new)]
    if rewritten[0] != rewritten[1]:
        return ImportState(None, "pytest's assertion rewriter rewrites other modules now")
    # noise is a value that varies, never a name one import sets and the other does not
    differ = sorted(
        d for d in outside_differences(old, new) if d not in noise or not _on_both(d, old, new)
    )
    if differ:
        return ImportState(None, f"importing changes state outside the repository: {differ[0]}")
    changed = {
        name
        for module, before in old["state"].items()
        for name in _changed_names(module, before, new["state"][module])
    }
    ran = old.get("ran")
    return ImportState(
        frozenset(changed),
        f"{len(changed)} names differ after importing",
        None if ran is None else frozenset(ran),
        {path: frozenset(lines) for path, lines in old.get("lines", {}).items()},
    )


def _on_both(difference: str, old: Result, new: Result) -> bool:
    kind, _, key = difference.partition(" ")
    return key in old[kind] and key in new[kind]


def _changed_names(module: str, before: dict[str, str], after: dict[str, str]) -> set[str]:
    """``module.NAME`` for each global whose digest differs; for a repository class, its
    members that differ (``module.C.attr``: read through them) and the class itself only when
    its frame (bases, metaclass, subclasses, registrations) differs."""
    out = set()
    for key in before.keys() | after.keys():
        if "." in key or before.get(key) == after.get(key):
            continue
        frame = f"{key}.<frame>"
        if frame not in before and frame not in after:
            out.add(f"{module}.{key}")
            continue
        members = {
            k
            for k in before.keys() | after.keys()
            if k.startswith(f"{key}.") and k != frame and before.get(k) != after.get(k)
        }
        out |= {f"{module}.{k}" for k in members}
        if before.get(frame) != after.get(frame) or not members:
            out.add(f"{module}.{key}")
    return out

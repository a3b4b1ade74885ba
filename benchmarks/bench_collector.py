"""What Guard's collector costs over a plain run, beside coverage.py's own per-test contexts,
side by side in one run: a plain `pytest`; `coverage run` with `dynamic_context =
test_function` (3.10/3.11: the same C tracer the collector drives); the collector with all of
its watchers, then without each (the functools caches, the watched dicts, the record of
reflective calls) and without any; and reading what it measured.

A large suite (networkx: 5.7k tests, graphs that fill cached properties by the hundred
thousand) shows costs that Flask's does not; a slice of it keeps the run short.

Run: python benchmarks/bench_collector.py [pkg==version] [test paths ...] [--base PYTHON]
     (default: networkx==3.4.2 networkx/algorithms/community networkx/generators)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import sdist_repo, target_venv

from guard_adapters.coverage.ingest import read_evidence, run_collector

DEFAULT = ("networkx==3.4.2", "networkx/algorithms/community", "networkx/generators")
WATCHERS = {
    "functools caches": {"GUARD_COLLECT_MEMO": "0"},
    "watched dicts": {"GUARD_COLLECT_DICTS": "0"},
    "reflective calls": {"GUARD_COLLECT_REFLECT": "0"},
}
QUIET = {"PYTHONDONTWRITEBYTECODE": "1"}


def timed_command(cmd: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env={**os.environ, **QUIET}, capture_output=True, check=False)
    return time.perf_counter() - started


def collector(
    repo: Path, python: Path, paths: list[str], off: dict[str, str]
) -> tuple[float, float]:
    saved = dict(os.environ)
    os.environ.update({**QUIET, **off})
    try:
        with tempfile.TemporaryDirectory(prefix="guard-bench-") as tmp:
            started = time.perf_counter()
            payload = run_collector(repo, str(python), paths, None, Path(tmp))
            ran = time.perf_counter() - started
            read_evidence(repo, Path(tmp), payload)
            return ran, time.perf_counter() - started - ran
    finally:
        os.environ.clear()
        os.environ.update(saved)


def has_pytest_config(repo: Path) -> bool:
    sections = {
        "pytest.ini": "",
        "pyproject.toml": "[tool.pytest.ini_options]",
        "tox.ini": "[pytest]",
        "setup.cfg": "[tool:pytest]",
    }
    return any(
        (repo / name).is_file() and marker in (repo / name).read_text(errors="replace")
        for name, marker in sections.items()
    )


def main(argv: list[str]) -> None:
    base = None
    if "--base" in argv:
        at = argv.index("--base")
        base, argv = argv[at + 1], argv[:at] + argv[at + 2 :]
    spec, *paths = argv or DEFAULT
    if not argv:
        paths = list(DEFAULT[1:])
    repo = sdist_repo(spec)
    python = target_venv(repo, base=base)
    # an sdist without pytest configuration of its own must not take the one of a folder above
    # (benchmarks/.work is inside Guard's checkout)
    ini = repo.parent / "bench-pytest.ini"
    ini.write_text("[pytest]\n")
    if not has_pytest_config(repo):
        paths = ["-c", str(ini), f"--rootdir={repo}", *paths]
    version = subprocess.run([str(python), "-V"], capture_output=True, text=True).stdout.strip()
    print(f"target: {spec} {' '.join(paths) or '(whole suite)'}, {version}")
    rows: list[tuple[str, float]] = []
    pytest = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths]
    rows.append(("plain pytest", timed_command(pytest, repo)))
    with tempfile.TemporaryDirectory(prefix="guard-bench-cov-") as tmp:
        rc = Path(tmp) / "coveragerc"
        rc.write_text(f"[run]\nsource = {repo}\ndynamic_context = test_function\n")
        data = Path(tmp) / ".coverage"
        cov = [str(python), "-m", "coverage", "run", f"--rcfile={rc}", f"--data-file={data}"]
        rows.append(("coverage.py, per-test contexts", timed_command([*cov, *pytest[1:]], repo)))
    ran, read = collector(repo, python, paths, {})
    rows += [("Guard's collector", ran), ("  reading what it measured", read)]
    for name, off in WATCHERS.items():
        rows.append((f"  without the {name}", collector(repo, python, paths, off)[0]))
    every = {k: v for off in WATCHERS.values() for k, v in off.items()}
    rows.append(("  without any watcher", collector(repo, python, paths, every)[0]))
    plain = rows[0][1]
    for label, seconds in rows:
        print(f"{label:34} {seconds:8.2f} s  {seconds / plain:5.2f}x plain")


if __name__ == "__main__":
    main(sys.argv[1:])

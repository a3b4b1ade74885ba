"""The import probe's cost per check on Flask 3.1.2: one edit after another, answered by a
probe kept for the session (the base's import reused), by a new probe per check that reads
the base's import kept on disk (a ``guard check`` process each), and by a new probe per check
with nothing kept (every import started again), a plain `pytest --collect-only` beside them.

Run: python benchmarks/bench_import_probe.py [checks]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import git, sdist_repo, target_venv
from evals.targets import python_of

from guard_adapters.imports.probe import SubprocessImportProbe
from guard_core.model import ChangedFile, ChangeSet, FileKind, FileRole

SPEC = "flask==3.1.2"
PACKAGE = "src/flask"


def module_edits(repo: Path, count: int) -> list[str]:
    """Files of the package, each edited in turn by a new module-level constant."""
    files = sorted(str(p.relative_to(repo)) for p in (repo / PACKAGE).rglob("*.py"))
    return [f for f in files if not f.endswith("__main__.py")][:count]


MODES = ("nothing kept", "kept on disk", "one probe kept")


def timed_checks(repo: Path, python: str, edits: list[str], mode: str) -> list[float]:
    base = git(repo, "rev-parse", "HEAD").strip()
    modules = module_edits(repo, 1000)
    folder = Path(tempfile.mkdtemp(prefix="guard-bench-kept-")) if mode == "kept on disk" else None
    kept = SubprocessImportProbe(repo, python)
    times = []
    for path in edits:
        file = repo / path
        original = file.read_text(encoding="utf-8")
        file.write_text(original + "\n_GUARD_BENCH_CONSTANT = 1\n", encoding="utf-8")
        try:
            alone = mode != "one probe kept"
            probe = SubprocessImportProbe(repo, python, kept=folder) if alone else kept
            change = ChangeSet(base, (ChangedFile(path, FileKind.MODIFIED, FileRole.SOURCE),))
            started = time.perf_counter()
            state = probe.compare(change, modules)
            times.append(time.perf_counter() - started)
            if state.changed is None:
                print(f"  {path}: not compared ({state.detail})")
        finally:
            file.write_text(original, encoding="utf-8")
    return times


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    repo = sdist_repo(SPEC)
    # 3.12 where pyenv has it: the probe watches what runs through sys.monitoring
    python = str(target_venv(repo, ("pytest<9",), base=python_of(12)))
    edits = module_edits(repo, count)
    started = time.perf_counter()
    subprocess.run([python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                   cwd=repo, check=True, capture_output=True)  # fmt: skip
    collect = time.perf_counter() - started
    timed = {mode: timed_checks(repo, python, edits, mode) for mode in MODES}
    print(f"Flask 3.1.2 on {python}, {len(edits)} checks, each a new module constant in one file")
    print(f"  plain pytest --collect-only: {collect:.2f}s")
    later = {mode: statistics.median(times[1:] or times) for mode, times in timed.items()}
    for mode, times in timed.items():
        ratio = later[mode] / later["nothing kept"]
        print(f"  {mode:15} first {times[0]:.2f}s, later median {later[mode]:.2f}s ({ratio:.2f}x)")


if __name__ == "__main__":
    main()

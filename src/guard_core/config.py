"""Settings: ``[tool.guard]`` in the target's pyproject.toml, then ``GUARD_*`` variables, then
explicit keyword overrides. Loading is a pure function of (repo, env, overrides)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from guard_core.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


@attrs.frozen
class Settings:
    """Everything Guard needs to know about one repository and how to treat it."""

    repo: Path
    falkordb_url: str | None = None  # None: the embedded server under state_dir
    graph: str | None = None  # None: derived from the repository's identity
    state_dir: Path | None = None  # None: <repo>/.guard
    python: str | None = None  # interpreter that runs the target's tests
    subset_threshold: float = 0.8
    medium_threshold: float = 0.5
    min_confidence: float = 0.0  # COVERED_BY edges below this are ignored
    # import the repository's modules at the base and now, and let what their import built
    # stand for the import-time code a change touched (off: every importer of that code)
    import_probe: bool = True
    pytest_args: tuple[str, ...] = ()
    plugin_autoload: bool = True
    policies: tuple[str, ...] = ()  # empty: every registered trust policy votes
    # `guard run` re-measures what it ran and moves the evidence base to the tree it passed on;
    # None: only with the embedded server (a shared graph's base must exist in every clone)
    refresh_evidence: bool | None = None
    # how many base commits' evidence the graph keeps (a shared server: main, branches,
    # worktrees); a check reads the nearest. None: 1 while guard run refreshes the evidence
    # (the embedded server), else 8
    evidence_bases: int | None = None
    # seconds to connect to the graph server and hear its first answer: a server that is down,
    # silent or not FalkorDB costs at most this before the decision falls back to run-all
    store_timeout: float = 5.0
    store_query_timeout: float = 60.0  # seconds one query may take once the server answered
    # the embedded server stops after this many seconds without a client; 0: never
    server_idle: float = 1800.0
    # the registered adapters to use, by name (a plug-in may register others)
    store: str = "falkordb"
    slicer: str = "git"
    runner: str = "pytest"
    # what a tolerant load (read-only commands) skipped: the broken file, key or variable
    config_problems: tuple[str, ...] = ()

    @property
    def refreshes_evidence(self) -> bool:
        if self.refresh_evidence is None:
            return self.falkordb_url is None
        return self.refresh_evidence

    @property
    def kept_bases(self) -> int:
        if self.evidence_bases is not None:
            return self.evidence_bases
        return 1 if self.refreshes_evidence else 8

    @property
    def guard_dir(self) -> Path:
        return self.state_dir if self.state_dir is not None else self.repo / ".guard"


_ENV = {
    "GUARD_FALKORDB_URL": "falkordb_url",
    "GUARD_GRAPH": "graph",
    "GUARD_STATE_DIR": "state_dir",
    "GUARD_PYTHON": "python",
    "GUARD_SUBSET_THRESHOLD": "subset_threshold",
    "GUARD_MEDIUM_THRESHOLD": "medium_threshold",
    "GUARD_MIN_CONFIDENCE": "min_confidence",
    "GUARD_DISABLE_PLUGIN_AUTOLOAD": "plugin_autoload",
    "GUARD_REFRESH_EVIDENCE": "refresh_evidence",
    "GUARD_EVIDENCE_BASES": "evidence_bases",
    "GUARD_STORE_TIMEOUT": "store_timeout",
    "GUARD_STORE_QUERY_TIMEOUT": "store_query_timeout",
    "GUARD_SERVER_IDLE": "server_idle",
    "GUARD_STORE": "store",
    "GUARD_SLICER": "slicer",
    "GUARD_RUNNER": "runner",
    "GUARD_IMPORT_PROBE": "import_probe",
}
_FLOATS = {"subset_threshold", "medium_threshold", "min_confidence"}
_SECONDS = {"store_timeout", "store_query_timeout"}
_BOOLS = {
    "plugin_autoload",
    "refresh_evidence",
    "import_probe",
}
_TUPLES = {"pytest_args", "policies"}
_PATHS = {"state_dir"}
_NAMES = {"store", "slicer", "runner"}
_FIELDS = {f.name for f in attrs.fields(Settings)} - {"repo", "config_problems"}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _read_pyproject(repo: Path) -> dict[str, Any]:
    path = repo / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(
            f"cannot read {path}: {exc}", hint="fix the file or remove its [tool.guard] table"
        ) from exc
    table = data.get("tool", {}).get("guard", {})
    if not isinstance(table, dict):
        raise ConfigError(f"[tool.guard] in {path} must be a table")
    return {key.replace("-", "_"): value for key, value in table.items()}


def _coerce(name: str, value: Any, origin: str) -> Any:
    try:
        if name in _FLOATS:
            number = float(value)
            if not 0.0 <= number <= 1.0:
                raise ValueError("must be within [0, 1]")
            return number
        if name in _SECONDS:
            seconds = float(value)
            if not 0.0 < seconds < float("inf"):
                raise ValueError("must be a positive number of seconds")
            return seconds
        if name == "server_idle":
            seconds = float(value)
            if not 0.0 <= seconds < float("inf"):
                raise ValueError("must be a number of seconds, 0 for never")
            return seconds
        if name == "evidence_bases":
            count = int(value)
            if isinstance(value, bool) or count < 1 or str(count) != str(value).strip():
                raise ValueError("must be a whole number of at least 1")
            return count
        if name in _BOOLS:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError("must be true or false")
        if name in _TUPLES:
            if isinstance(value, str):
                return tuple(value.split())
            return tuple(str(v) for v in value)
        if name in _PATHS:
            return Path(value).expanduser() if value is not None else None
        if name in _NAMES:
            text = str(value).strip()
            if not text:
                raise ValueError("must name a registered adapter")
            return text
        return None if value is None else str(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid value for {name} in {origin}: {value!r} ({exc})") from exc


def load_settings(
    repo: str | Path,
    env: Mapping[str, str] | None = None,
    *,
    tolerant: bool = False,
    **overrides: Any,
) -> Settings:
    """Build the settings for ``repo``; later sources win: pyproject, environment, overrides.

    ``tolerant`` (for commands that only read): a pyproject.toml that does not parse, or a
    ``[tool.guard]`` key or ``GUARD_*`` variable that is unknown or invalid, is skipped (the
    default stands) and described in ``config_problems`` instead of raising ConfigError.
    Explicit overrides are never skipped."""
    root = Path(repo).expanduser().resolve()
    values: dict[str, Any] = {}
    problems: list[str] = []

    def tolerate(exc: ConfigError) -> None:
        if not tolerant:
            raise exc
        problems.append(exc.message)

    try:
        table = _read_pyproject(root)
    except ConfigError as exc:
        tolerate(exc)
        table = {}
    for name, value in table.items():
        try:
            if name not in _FIELDS:
                raise ConfigError(
                    f"unknown key {name!r} in [tool.guard] of {root / 'pyproject.toml'}",
                    hint=f"known keys: {', '.join(sorted(_FIELDS))}",
                )
            values[name] = _coerce(name, value, f"[tool.guard] of {root / 'pyproject.toml'}")
        except ConfigError as exc:
            tolerate(exc)
    table_paths = {name: values[name] for name in _PATHS if name in values}
    for var, name in _ENV.items():
        if env is not None and var in env:
            raw = env[var]
            try:
                if name == "plugin_autoload":
                    values[name] = not _coerce(name, raw, var)
                elif raw != "":
                    values[name] = _coerce(name, raw, var)
            except ConfigError as exc:
                tolerate(exc)
    for name, value in overrides.items():
        if name not in _FIELDS:
            raise ConfigError(f"unknown setting {name!r}")
        if value is not None:
            values[name] = _coerce(name, value, "arguments")
    for name in _PATHS:  # relative to the repository in pyproject.toml, to here elsewhere
        if isinstance(values.get(name), Path):
            base = root if values[name] is table_paths.get(name) else Path.cwd()
            values[name] = (base / values[name]).resolve()
    settings = Settings(repo=root, **values)
    if settings.medium_threshold > settings.subset_threshold:
        tolerate(ConfigError("medium_threshold must not exceed subset_threshold"))
        values.pop("medium_threshold", None)
        values.pop("subset_threshold", None)
        settings = Settings(repo=root, **values)
    return attrs.evolve(settings, config_problems=tuple(problems))

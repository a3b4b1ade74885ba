"""The base's imports kept between checks: in memory for the probe's life and, given a
folder, on disk for later processes (each ``guard check`` and hook is one), keyed by
everything the import read. A file that cannot be read or is not the key's keeps nothing."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from guard_core.logs import get_logger

log = get_logger("guard.imports")

Result = dict[str, Any]
LIMIT = 16  # files kept on disk, the newest
NAME = "[0-9a-f]" * 40  # a kept file's name: only those are read, or removed


class KeptImports:
    def __init__(self, folder: Path | None, limit: int = LIMIT) -> None:
        self.folder = folder
        self.limit = limit
        self._runs: dict[str, Result] = {}
        self._noise: dict[str, set[str]] = {}  # what two imports of that base differ in

    def run(self, key: str) -> Result | None:
        self._load(key)
        return self._runs.get(key)

    def noise(self, key: str) -> set[str] | None:
        self._load(key)
        return self._noise.get(key)

    def keep(self, key: str, run: Result, noise: set[str] | None) -> None:
        self._runs[key] = run
        if noise is not None:
            self._noise[key] = noise
        self._save(key)

    def _file(self, key: str) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()[:40]}.json"

    def _load(self, key: str) -> None:
        file = self._file(key)
        if key in self._runs or file is None:
            return
        try:
            if not file.is_file():  # none, or a pipe that would never end
                return
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if not isinstance(data, dict) or data.get("key") != key:
            return
        if isinstance(data.get("run"), dict):
            self._runs[key] = data["run"]
        if isinstance(data.get("noise"), list):
            self._noise[key] = set(data["noise"])

    def _save(self, key: str) -> None:
        file = self._file(key)
        if file is None:
            return
        noise = self._noise.get(key)
        noise_kept = None if noise is None else sorted(noise)
        record = {"key": key, "run": self._runs[key], "noise": noise_kept}
        partial = file.with_name(f"{file.stem}.{os.getpid()}.partial")
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            partial.write_text(json.dumps(record), encoding="utf-8")
            os.replace(partial, file)  # a reader sees the whole file or none
            kept = sorted(file.parent.glob(f"{NAME}.json"), key=_age)
            for old in kept[self.limit :]:
                with contextlib.suppress(OSError):
                    old.unlink()
        except OSError as exc:  # kept in memory only
            log.warning("import_probe_not_kept", error=repr(exc))
            with contextlib.suppress(OSError):
                partial.unlink()


def _age(file: Path) -> float:
    try:
        return -file.stat().st_mtime
    except OSError:
        return 0.0

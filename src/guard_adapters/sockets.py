"""Unix socket paths that fit the kernel's limit (standard library only: the ``guard`` fast
path imports this before anything else)."""

from __future__ import annotations

import os
import zlib

# sun_path is 108 bytes on Linux, 104 on macOS; leave room for the terminating NUL.
_MAX_SOCKET_PATH = 100


def digest(text: str) -> str:
    data = text.encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def socket_path(folder: str | os.PathLike[str], name: str) -> str:
    """``folder/name``, or a path of the same folder's own under the temporary folder when
    that is too long to bind."""
    path = os.path.join(os.fspath(folder), name)
    if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
        tmp = os.environ.get("TMPDIR") or "/tmp"
        path = os.path.join(tmp, f"guard-{os.getuid()}-{digest(os.fspath(folder))}.sock")
    return path

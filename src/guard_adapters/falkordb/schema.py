"""The graph schema: labels, indexes and the version node that guards against mismatches."""

from __future__ import annotations

SCHEMA_VERSION = 1
META_KEY = "guard"

# (label, property) pairs that queries look up by; FalkorDB range indexes.
INDEXES: tuple[tuple[str, str], ...] = (
    ("File", "path"),
    ("File", "module"),
    ("Function", "id"),
    ("Function", "file"),
    ("Function", "dotted"),
    ("Function", "name"),
    ("Test", "id"),
    ("Test", "file"),
    ("Run", "id"),
    ("Meta", "key"),
)

BATCH = 5000
"""Rows per ``UNWIND $rows`` write."""

"""The remaining ``guard`` commands (ingest, check, run, queries), registered on import."""

from __future__ import annotations

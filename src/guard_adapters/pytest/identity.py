"""An object's identity for the collector's hot paths, without ``id()``: ``id()`` raises an
audit event, and with the collector's audit hook installed each event is a Python call (on
networkx, the ``id()`` calls of cached-property reads doubled the measured run).

``object.__hash__`` is the object's address rotated by four bits, whatever the class defines:
unique among the objects alive, as ``id()`` is."""

from __future__ import annotations

address = object.__hash__

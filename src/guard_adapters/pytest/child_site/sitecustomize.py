"""Python runs this at the start-up of every process a measured test starts (the collector
puts this folder first on ``PYTHONPATH``): measure it, then run the environment's own
``sitecustomize``, if there is one, as Python would have."""

import importlib.machinery
import importlib.util
import os
import sys

try:
    from guard_adapters.pytest.child import measure

    measure()
except Exception:  # never break the program under test; unmeasured, its test stays wide
    pass

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _here]
)
if _spec is not None and _spec.loader is not None:
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["sitecustomize"] = _module
    _spec.loader.exec_module(_module)

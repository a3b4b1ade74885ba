"""A small pytest project for integration tests: fixtures of several scopes, a constant read
by a test, a template read by a test, an import-time side effect and a flaky test."""

from __future__ import annotations

FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "from pkg.registry import register\n\nregister('boot')\n",
    "pkg/registry.py": "ITEMS = []\n\n\ndef register(name):\n    ITEMS.append(name)\n",
    "pkg/core.py": (
        "from pathlib import Path\n\n"
        "LIMIT = 10\n\n\n"
        "def add(a, b):\n    return min(a + b, LIMIT)\n\n\n"
        "def mul(a, b):\n    return a * b\n\n\n"
        "def unused(a):\n    return -a\n\n\n"
        "def render():\n"
        "    return (Path(__file__).parent / 'templates' / 'page.html').read_text()\n\n\n"
        "class Calc:\n"
        "    def setup(self):\n        self.ready = True\n        return self\n\n"
        "    def double(self, x):\n        return mul(x, 2)\n"
    ),
    "pkg/templates/page.html": "<p>hello</p>\n",
    "tests/__init__.py": "",
    "tests/conftest.py": (
        "import pytest\nfrom pkg.core import Calc\n\n\n"
        "@pytest.fixture(scope='session')\ndef calc():\n    return Calc().setup()\n"
    ),
    "tests/test_a.py": (
        "import os\nfrom pathlib import Path\nimport pytest\nfrom pkg import core\n\n\n"
        "def test_add(calc):\n    assert core.add(2, 3) == 5\n\n\n"
        "def test_const():\n    assert core.LIMIT == 10\n\n\n"
        "def test_template():\n    assert 'hello' in core.render()\n\n\n"
        "@pytest.mark.parametrize('x', [1, 2])\n"
        "def test_param(x):\n    assert core.mul(x, 1) == x\n\n\n"
        "def test_flaky():\n"
        "    counter = Path(os.environ['FLAKY_COUNTER'])\n"
        "    n = int(counter.read_text()) if counter.exists() else 0\n"
        "    counter.write_text(str(n + 1))\n"
        "    if n % 2:\n        core.mul(1, 1)\n"
        "    assert n % 2 == 0\n"
    ),
    "tests/test_b.py": (
        "import pytest\n\n\n"
        "class TestCalc:\n"
        "    @pytest.fixture(scope='class')\n"
        "    def ready(self, calc):\n        return calc.ready\n\n"
        "    def test_double(self, calc, ready):\n        assert calc.double(2) == 4\n\n"
        "    def test_ready(self, ready):\n        assert ready\n"
    ),
}

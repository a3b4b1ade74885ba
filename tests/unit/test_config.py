from __future__ import annotations

from pathlib import Path

import pytest

from guard_core.config import load_settings
from guard_core.errors import ConfigError


def write(repo: Path, text: str) -> Path:
    (repo / "pyproject.toml").write_text(text, encoding="utf-8")
    return repo


def test_defaults_without_pyproject(tmp_path: Path) -> None:
    s = load_settings(tmp_path, {})
    assert s.repo == tmp_path.resolve()
    assert s.falkordb_url is None and s.guard_dir == tmp_path.resolve() / ".guard"
    assert (s.subset_threshold, s.medium_threshold) == (0.8, 0.5)


def test_precedence_pyproject_then_env_then_overrides(tmp_path: Path) -> None:
    write(
        tmp_path,
        '[tool.guard]\ngraph = "from-toml"\nsubset-threshold = 0.9\npytest_args = ["-x", "-q"]\n',
    )
    s = load_settings(tmp_path, {"GUARD_GRAPH": "from-env"})
    assert (s.graph, s.subset_threshold, s.pytest_args) == ("from-env", 0.9, ("-x", "-q"))
    s = load_settings(tmp_path, {"GUARD_GRAPH": "from-env"}, graph="explicit")
    assert s.graph == "explicit"


def test_env_url_and_autoload_switch(tmp_path: Path) -> None:
    s = load_settings(
        tmp_path,
        {"GUARD_FALKORDB_URL": "rediss://:pw@host:6380", "GUARD_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert s.falkordb_url == "rediss://:pw@host:6380" and s.plugin_autoload is False


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[tool.guard]\nnope = 1\n", "unknown key 'nope'"),
        ("[tool.guard]\nsubset_threshold = 2\n", "must be within"),
        ("[tool.guard]\nimport_probe = 'maybe'\n", "true or false"),
        ("[tool.guard\n", "cannot read"),
        ("[tool.guard]\nsubset_threshold = 0.4\nmedium_threshold = 0.6\n", "must not exceed"),
    ],
)
def test_bad_config_is_a_clear_error(tmp_path: Path, toml: str, message: str) -> None:
    write(tmp_path, toml)
    with pytest.raises(ConfigError, match=message):
        load_settings(tmp_path, {})


def test_bad_env_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="GUARD_MIN_CONFIDENCE"):
        load_settings(tmp_path, {"GUARD_MIN_CONFIDENCE": "high"})


def test_store_timeouts_are_positive_seconds(tmp_path: Path) -> None:
    s = load_settings(tmp_path, {})
    assert 0 < s.store_timeout <= 5 and s.store_query_timeout >= s.store_timeout
    write(tmp_path, "[tool.guard]\nstore-timeout = 2\n")
    s = load_settings(tmp_path, {"GUARD_STORE_QUERY_TIMEOUT": "7.5"})
    assert (s.store_timeout, s.store_query_timeout) == (2.0, 7.5)
    for bad in ("0", "-1", "nan", "inf", "soon"):
        with pytest.raises(ConfigError, match="store_timeout"):
            load_settings(tmp_path, {"GUARD_STORE_TIMEOUT": bad})


def test_a_tolerant_load_skips_what_is_broken_and_says_so(tmp_path: Path) -> None:
    write(tmp_path, '[tool.guard]\ngraph = "kept"\nnope = 1\nmin-confidence = "x"\n')
    with pytest.raises(ConfigError, match="unknown key 'nope'"):
        load_settings(tmp_path, {})
    s = load_settings(tmp_path, {"GUARD_SUBSET_THRESHOLD": "2"}, tolerant=True)
    assert (s.graph, s.min_confidence, s.subset_threshold) == ("kept", 0.0, 0.8)
    assert len(s.config_problems) == 3
    write(tmp_path, "[tool.guard\n")
    s = load_settings(tmp_path, {}, tolerant=True)
    assert s.graph is None and "cannot read" in s.config_problems[0]
    with pytest.raises(ConfigError, match="unknown setting"):
        load_settings(tmp_path, {}, tolerant=True, nope=1)

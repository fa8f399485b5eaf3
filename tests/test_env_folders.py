"""Every folder an environment variable names is read as an absolute path, where it is read:
pinbench starts builders, converters and evaluators in folders of their own, where a relative
name would be another place (``PINBENCH_WHEEL_CACHE=cache`` made llama-cpp-python's build,
run in its source folder, write its wheel into the source's own ``cache/...``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


def _home() -> Path:
    from pinbench.config import Settings

    return Settings.from_env().home


def _shared() -> Path:
    from pinbench.evaluator.runners.venv import shared_cache

    return shared_cache()


def _xdg() -> Path:
    return _shared().parent


def _wheels() -> Path:
    from pinbench.catalog.wheels import default_cache

    return default_cache()


def _built_wheels() -> Path:
    from pinbench.environments.source_builds import cache_root

    return cache_root()


def _converters() -> Path:
    from pinbench.catalog.engines import converter_cache

    return converter_cache()


READERS: dict[str, Callable[[], Path]] = {
    "PINBENCH_HOME": _home,
    "PINBENCH_CACHE": _shared,
    "XDG_CACHE_HOME": _xdg,
    "PINBENCH_WHEELS": _wheels,
    "PINBENCH_WHEEL_CACHE": _built_wheels,
    "PINBENCH_CONVERTER_CACHE": _converters,
}


@pytest.mark.parametrize("variable", READERS)
def test_a_folder_named_by_a_relative_path_is_the_one_under_where_it_was_named(
    variable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PINBENCH_CACHE", raising=False)  # XDG_CACHE_HOME is read without it
    monkeypatch.setenv(variable, "named/here")
    assert READERS[variable]() == tmp_path / "named" / "here"


@pytest.mark.parametrize("variable", READERS)
def test_a_folder_named_with_a_tilde_is_under_the_users_home(
    variable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PINBENCH_CACHE", raising=False)
    monkeypatch.setenv(variable, "~/kept")
    assert READERS[variable]() == tmp_path / "kept"

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


def _doctors_cache() -> Path:
    from pinbench.doctor.findings import Place

    return Place().cache()


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
    "PINBENCH_CACHE as the doctor reads it": _doctors_cache,
    "PINBENCH_WHEELS": _wheels,
    "PINBENCH_WHEEL_CACHE": _built_wheels,
    "PINBENCH_CONVERTER_CACHE": _converters,
}


def _named(variable: str) -> str:
    return variable.split(" ")[0]


@pytest.mark.parametrize("variable", READERS)
def test_a_folder_named_by_a_relative_path_is_the_one_under_where_it_was_named(
    variable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PINBENCH_CACHE", raising=False)  # XDG_CACHE_HOME is read without it
    monkeypatch.setenv(_named(variable), "named/here")
    assert READERS[variable]() == tmp_path / "named" / "here"


@pytest.mark.parametrize("variable", READERS)
def test_a_folder_named_with_a_tilde_is_under_the_users_home_and_needs_none_when_absolute(
    variable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PINBENCH_CACHE", raising=False)
    monkeypatch.setenv(_named(variable), "~/kept")
    assert READERS[variable]() == tmp_path / "kept"
    # a machine with no home (an arbitrary user in a container): a folder named is taken
    monkeypatch.delenv("HOME")
    monkeypatch.setattr(Path, "home", _no_home)
    monkeypatch.setenv(_named(variable), str(tmp_path / "set"))
    assert READERS[variable]() == tmp_path / "set"


def _no_home() -> Path:
    raise RuntimeError("Could not determine home directory.")


def test_the_engines_the_catalog_converts_for_are_named_and_checked() -> None:
    """``build(..., engines=...)``: every engine where None, the chosen ones in the catalog's
    order, an unknown one refused naming the catalog's, one string refused (not its letters)."""
    from pinbench.catalog.stages import ENGINES, UnknownEngines, check_engines, framework_names

    assert check_engines(None) == ENGINES
    assert check_engines(["llama-cpp-python", "ctranslate2"]) == ("ctranslate2", "llama-cpp-python")
    with pytest.raises(UnknownEngines, match=r"unknown engines \['vllm'\]; engines: onnx"):
        check_engines(["ctranslate2", "vllm"])
    with pytest.raises(TypeError, match="not the one string 'ctranslate2'"):
        check_engines("ctranslate2")
    assert framework_names(["llama"], ["ctranslate2"]) == [
        "onnxruntime",
        "transformers",
        "ctranslate2",
    ]

"""scripts/uv_install.py (run by scripts/install-venv.sh for ``make dev``): pip's configuration
as ``pip config list`` prints it, turned into uv's options, or a reason to install with pip."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "uv_install.py"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("uv_install", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CASES = [
    # (why, `pip config list`'s output, uv's arguments, uv's environment)
    (
        "a multi-line value is printed as a literal with \\n: one option per URL",
        "global.extra-index-url='\\nhttps://a.example/simple\\nhttps://b.example/simple'\n",
        [
            "--extra-index-url",
            "https://a.example/simple",
            "--extra-index-url",
            "https://b.example/simple",
        ],
        {},
    ),
    (
        "a space-separated value, and pip's own environment (:env:) as a section",
        "global.find-links='/wheels /more'\n:env:.constraint='/etc/c.txt'\n",
        ["--find-links", "/wheels", "--find-links", "/more", "--constraint", "/etc/c.txt"],
        {},
    ),
    (
        "no-index true is uv's --no-index; false is nothing",
        "global.no-index='true'\ninstall.no-index='false'\nglobal.index-url='https://i/simple'\n",
        ["--no-index", "--index-url", "https://i/simple"],
        {},
    ),
    (
        "trusted-host is --allow-insecure-host, cert is SSL_CERT_FILE",
        "global.trusted-host='a.example b.example'\nglobal.cert='/etc/ca.pem'\n",
        ["--allow-insecure-host", "a.example", "--allow-insecure-host", "b.example"],
        {"SSL_CERT_FILE": "/etc/ca.pem"},
    ),
    (
        "settings that do not decide where packages come from are left out",
        "global.timeout='60'\n:env:.disable-pip-version-check='1'\nsearch.index='https://s'\n",
        [],
        {},
    ),
]


@pytest.mark.parametrize(("why", "listing", "args", "env"), CASES, ids=[c[0] for c in CASES])
def test_pip_settings_become_uv_options(
    why: str, listing: str, args: list[str], env: dict[str, str]
) -> None:
    assert script().uv_options(listing) == (args, env), why


@pytest.mark.parametrize("option", ["proxy", "client-cert"])
def test_a_setting_uv_is_not_given_means_pip_installs(option: str) -> None:
    uv_install = script()
    with pytest.raises(uv_install.UsePip, match=f"sets `{option}`"):
        uv_install.uv_options(f"global.{option}='x'\n")


def test_uv_is_told_to_compile_bytecode_as_pip_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``.pyc`` files, and with ``PYTHONDONTWRITEBYTECODE`` set (as on this project's
    machines), every process compiles each module it imports again (issue 49)."""
    module = script()
    ran: list[list[str]] = []

    class Done:
        stdout = ""
        returncode = 0

    def run(command: list[str], **_: object) -> Done:
        ran.append(command)
        return Done()

    monkeypatch.setattr(module.subprocess, "run", run)
    assert module.main(["/venv/bin/python", "-e", ".[dev]"]) == 0
    install = ran[-1]
    assert install[1:5] == ["-m", "uv", "pip", "install"] and "--compile-bytecode" in install


@pytest.mark.parametrize("package", ["torch", "numpy", "sqlalchemy", "pinbench"])
def test_the_environment_the_suite_runs_in_holds_bytecode(package: str) -> None:
    """The venv ``make dev`` installed: its packages' modules come with their ``.pyc``, and so
    does the project's own source (``make dev`` compiles it: an editable install does not)."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None
    cached = Path(importlib.util.cache_from_source(spec.origin))
    assert cached.is_file(), f"{package} has no bytecode ({cached}): install with bytecode"

"""The CLI's contract: every command, argument and option that the Typer-built CLI had (recorded
in ``tests/data/cli_contract.json`` before the move to Click, decision 136) is still there with
the same names, kind, type, multiplicity, default, requiredness and help, and ``pinbench
--help``'s one-line helps (a table, so that no command module is imported) are each command's
own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import pytest

from pinbench.cli import COMMANDS, app, load

CONTRACT: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "cli_contract.json").read_text()
)

# Click's type names for the Typer-displayed ones.
TYPES = {
    "text": "str",
    "boolean": "bool",
    "path": "path",
    "integer": "int",
    "float": "float",
    "integer range": "int range",
}


def _command(path: str) -> click.Command:
    if path == "<root>":
        return app
    first, *rest = path.split()
    cmd = load(first)
    for name in rest:
        assert isinstance(cmd, click.Group), f"{path}: {cmd.name} is not a group"
        sub = cmd.commands.get(name)
        assert sub is not None, f"{path}: no command {name!r} in {cmd.name}"
        cmd = sub
    return cmd


def _words(text: str | None) -> str:
    return " ".join((text or "").split())


def _typer_type(param: click.Parameter) -> str:
    base = TYPES.get(param.type.name, param.type.name)
    if param.multiple or param.nargs == -1:
        return f"<list[{'Path' if base == 'path' else base}]>"
    return f"<{base}>"


def _range(record: list[str] | None) -> tuple[int | None, int | None] | None:
    """The bounds Typer showed in an option's help: ``0<=x<=3``, ``x>=1`` or ``x<=9``."""
    text = (record or ["", ""])[1]
    both = re.search(r"(-?\d+)<=x<=(-?\d+)\]", text)
    if both:
        return (int(both.group(1)), int(both.group(2)))
    low = re.search(r"x>=(-?\d+)\]", text)
    high = re.search(r"x<=(-?\d+)\]", text)
    if low is None and high is None:
        return None
    return (int(low.group(1)) if low else None, int(high.group(1)) if high else None)


def _default(param: click.Parameter) -> str:
    unset = param.default is None or "UNSET" in repr(param.default)
    if param.multiple or param.nargs == -1:
        return "None" if unset or not param.default else repr(param.default)
    return "None" if unset else repr(param.default)


@pytest.mark.parametrize("path", sorted(CONTRACT), ids=str)
def test_command_keeps_its_contract(path: str) -> None:
    want = CONTRACT[path]
    cmd = _command(path)
    assert isinstance(cmd, click.Group) == want["group"]
    assert _words(cmd.help) == _words(want["help"])
    assert bool(cmd.hidden) == want["hidden"]
    params = {p.name: p for p in cmd.params if p.name != "help"}
    wanted = {p["name"]: p for p in want["params"]}
    assert sorted(params) == sorted(wanted)
    for name, spec in wanted.items():
        param = params[name]
        got = {
            "kind": "argument" if isinstance(param, click.Argument) else "option",
            "opts": list(param.opts),
            "secondary": list(param.secondary_opts),
            "type": _typer_type(param),
            "required": param.required,
            "multiple": param.multiple,
            "nargs": param.nargs,
            "is_flag": bool(getattr(param, "is_flag", False)),
            "default": _default(param),
            "help": _words(getattr(param, "help", None)),
        }
        expected = {k: spec[k] for k in got}
        expected["help"] = _words(spec["help"])
        assert got == expected, f"{path} {name}"
        if spec["type"] == "<int range>":
            assert isinstance(param.type, click.IntRange)
            assert (param.type.min, param.type.max) == _range(spec["help_record"])


def test_root_lists_every_command_with_its_own_one_line_help() -> None:
    roots = {k: v for k, v in CONTRACT.items() if k != "<root>" and " " not in k}
    assert sorted(COMMANDS) == sorted(roots)
    for name, (_, _, short) in COMMANDS.items():
        assert short == load(name).get_short_help_str(limit=120) == roots[name]["short_help"]

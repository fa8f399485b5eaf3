"""``pinbench serve --config FILE``: the server's options from a TOML file.

The file's ``[serve]`` table names options as the command line does (``max-upload-mb`` or
``max_upload_mb``); each value is checked by the option's own type and bounds, as if typed on
the command line. Precedence: a flag, then the option's environment variable, then the file,
then the default (Click's ``default_map``). An unknown table or key, a value of the wrong type
and a file that is not TOML are refused before anything starts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])
MAX_BYTES = 1 << 20
"""A configuration file is small; a larger one is refused unread."""


def config_option(command: F) -> F:
    """The ``--config FILE`` option (``PINBENCH_CONFIG``), read before every other option."""
    return click.option(
        "--config",
        "config",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        envvar="PINBENCH_CONFIG",
        show_envvar=True,
        is_eager=True,
        expose_value=False,
        callback=_load,
        help="A TOML file whose [serve] table sets these options (flags and their environment "
        "variables override it).",
    )(command)


def _load(ctx: click.Context, param: click.Parameter, path: Path | None) -> None:
    if path is None:
        return
    import tomllib

    if path.stat().st_size > MAX_BYTES:
        raise click.BadParameter(f"{path} is over {MAX_BYTES:,} bytes", ctx, param)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"{path} is not TOML: {exc}", ctx, param) from None
    extra = sorted(set(data) - {"serve"})
    if extra:
        raise click.BadParameter(f"{path}: unknown table {extra[0]!r} (only [serve])", ctx, param)
    table = data.get("serve", {})
    if not isinstance(table, dict):
        raise click.BadParameter(f"{path}: serve must be a table", ctx, param)
    names = _option_names(ctx.command)
    chosen: dict[str, Any] = {}
    for key, value in table.items():
        name = names.get(key)
        if name is None:
            known = ", ".join(sorted(k for k in names if "_" not in k))
            raise click.BadParameter(
                f"{path}: unknown key serve.{key} (the keys: {known})", ctx, param
            )
        if name in chosen:
            raise click.BadParameter(f"{path}: serve.{key} is given twice", ctx, param)
        chosen[name] = value
    ctx.default_map = {**(ctx.default_map or {}), **chosen}


def _option_names(command: click.Command) -> dict[str, str]:
    """Every spelling a key may take (``max-upload-mb``, ``max_upload_mb``) -> the option."""
    out: dict[str, str] = {}
    for param in command.params:
        if not isinstance(param, click.Option) or param.name in (None, "config", "help"):
            continue
        for opt in param.opts:
            out[opt.lstrip("-")] = param.name
        out[param.name] = param.name
    return out

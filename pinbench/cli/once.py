"""Every option of a command is given at most once: Click keeps the last of a repeated
single-valued option (``--alpha 0.01 --alpha 0.05`` meant 0.05) and of a flag and its negation
(``--allow-code --no-allow-code``); pinbench refuses both as the usage error they are, naming
the option. Options declared ``multiple`` (``--run ID`` given K times) and counted ones may
repeat."""

from __future__ import annotations

import types
from typing import Any

import click

_CHECKED = "_pinbench_options_once"


def options_once(command: click.Command) -> click.Command:
    """``command`` (and, for a group, each of its commands) made to refuse a repeated option
    when its arguments are parsed; returned for chaining. Done once per command object."""
    if not getattr(command, _CHECKED, False):
        setattr(command, _CHECKED, True)
        parse = command.parse_args

        def parse_args(self: click.Command, ctx: click.Context, args: list[str]) -> list[str]:
            _refuse_repeats(self, ctx, args)
            return parse(ctx, args)

        command.parse_args = types.MethodType(parse_args, command)  # type: ignore[method-assign]
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            options_once(sub)
    return command


def _refuse_repeats(command: click.Command, ctx: click.Context, args: list[str]) -> None:
    if ctx.resilient_parsing:  # shell completion: no error, whatever was typed
        return
    try:
        _, _, order = command.make_parser(ctx).parse_args(args=list(args))
    except click.UsageError:
        return  # Click says what is wrong when it parses them itself
    seen: set[Any] = set()
    for param in order:
        if not isinstance(param, click.Option) or param.multiple or param.count:
            continue
        if param.is_eager:  # --help, --version: acted on at once, harmless twice
            continue
        if param.name in seen:
            names = " / ".join(param.opts + param.secondary_opts)
            raise click.UsageError(f"{names} is given more than once: give it once", ctx=ctx)
        seen.add(param.name)

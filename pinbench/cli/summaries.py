"""A command's line in its group's ``--help`` listing is its help's first sentence, whole.

Click shortens that sentence to what fits beside the longest command name and ends it with
``...`` (``pinbench study --help`` cut five of its six lines mid-sentence); pinbench gives each
command its first sentence as its summary instead, wrapped by the listing. Each first sentence
is kept short enough for that (``SUMMARY_MAX``, held by ``tests/test_cli_summaries.py``)."""

from __future__ import annotations

import click

SUMMARY_MAX = 110
"""The longest first sentence a command's help may open with: two lines of a listing."""

_DONE = "_pinbench_summarised"


def whole_summaries(command: click.Command) -> click.Command:
    """``command`` and, for a group, each command under it given its help's first sentence as
    the summary its group lists (one it sets itself is kept); returned for chaining."""
    if not getattr(command, _DONE, False):
        setattr(command, _DONE, True)
        if command.short_help is None and command.help:
            command.short_help = command.get_short_help_str(limit=len(command.help))
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            whole_summaries(sub)
    return command

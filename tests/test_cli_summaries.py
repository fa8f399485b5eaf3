"""Every group's ``--help`` lists each of its commands by its help's first sentence, whole
(``pinbench.cli.summaries``): Click cut a sentence longer than the room beside the longest
command name to words and ``...``, so that ``pinbench study --help`` showed five of its six
commands mid-sentence. Each first sentence is short enough to list (``SUMMARY_MAX``)."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from pinbench.cli import COMMANDS, app, load
from pinbench.cli.summaries import SUMMARY_MAX


def _tree() -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command under the root, with its path of names."""

    def under(
        path: tuple[str, ...], command: click.Command
    ) -> Iterator[tuple[tuple[str, ...], click.Command]]:
        yield path, command
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                if not sub.hidden:
                    yield from under((*path, name), sub)

    for name in COMMANDS:
        yield from under((name,), load(name))


def _first_sentence(help_text: str) -> str:
    """The first paragraph's words up to the first period that ends a sentence (one followed
    by a word that does not start in lower case), as a reader finds it."""
    words = help_text.partition("\n\n")[0].split()
    for i, word in enumerate(words):
        if word.endswith(".") and (i == len(words) - 1 or not words[i + 1][0].islower()):
            return " ".join(words[: i + 1])
    return " ".join(words)


TREE = list(_tree())
GROUPS = [(path, cmd) for path, cmd in TREE if isinstance(cmd, click.Group)]


def test_every_command_is_summarised_by_its_first_sentence_whole_and_short() -> None:
    assert len(TREE) > 90  # every command, not only the root's
    for path, command in TREE:
        assert command.help, f"pinbench {' '.join(path)} has no help"
        first = _first_sentence(command.help)
        assert command.get_short_help_str() == first, " ".join(path)
        assert len(first) <= SUMMARY_MAX, f"pinbench {' '.join(path)}: {first!r} ({len(first)})"


def test_the_roots_table_is_each_commands_summary() -> None:
    for name, (_, _, summary) in COMMANDS.items():
        assert summary == _first_sentence(load(name).help or ""), name


@pytest.mark.parametrize(
    ("path", "group"),
    [((), app), *GROUPS],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else "",
)
def test_a_groups_help_lists_each_command_by_its_whole_summary(
    path: tuple[str, ...], group: click.Group
) -> None:
    shown = CliRunner().invoke(app, [*path, "--help"], terminal_width=80)
    assert shown.exit_code == 0, shown.output
    # the listing's words, a word Click's wrapping broke after its hyphen joined again
    listing = " ".join(shown.output.partition("\nCommands:\n")[2].split()).replace("- ", "-")
    assert listing
    for name in group.list_commands(click.Context(group)):
        sub = group.get_command(click.Context(group), name)
        assert sub is not None
        if sub.hidden:
            continue
        assert f"{name} {sub.get_short_help_str()}".replace("- ", "-") in listing, (path, name)

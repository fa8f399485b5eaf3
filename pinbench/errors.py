"""The project's errors: one base class, each error carries its data as typed attributes.

The CLI (and later the REST API) turns them into a message and an exit code / HTTP status in
one place. ``UserError`` subclasses are the caller's fault (bad input, not found, conflict):
exit code 1. ``SystemFailure`` subclasses are ours or the environment's: exit code 3.
"""

from __future__ import annotations

from typing import ClassVar


class PinbenchError(Exception):
    """Base of every error pinbench raises on purpose."""

    exit_code = 3

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UserError(PinbenchError):
    """The input was wrong: nothing was changed."""

    exit_code = 1


class SystemFailure(PinbenchError):
    """The system failed (database unreachable, disk full, ...)."""

    exit_code = 3


class InvalidValue(UserError):
    """A value given as text does not parse: names the text and the reason."""

    what: ClassVar[str] = "value"

    def __init__(self, *, text: str, reason: str) -> None:
        super().__init__(f"invalid {self.what} {text!r}: {reason}")
        self.text = text
        self.reason = reason


class InvalidDocument(UserError):
    """A document (manifest, request, lockfile) failed validation: names it and the reason."""

    what: ClassVar[str] = "document"

    def __init__(self, *, source: str, reason: str) -> None:
        super().__init__(f"invalid {self.what} {source}: {reason}")
        self.source = source
        self.reason = reason


class VersionError(InvalidValue):
    """A version is not a valid semantic version."""

    what = "version"


class RangeError(InvalidValue):
    """A version range does not parse."""

    what = "version range"

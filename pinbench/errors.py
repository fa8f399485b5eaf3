"""The project's errors: one base class, each error carries its data as typed attributes.

The CLI (and later the REST API) turns them into a message and an exit code / HTTP status in
one place. ``UserError`` subclasses are the caller's fault (bad input, not found, conflict):
exit code 1. ``SystemFailure`` subclasses are ours or the environment's: exit code 3.
"""

from __future__ import annotations


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


class VersionError(UserError):
    """A version is not a valid semantic version."""

    def __init__(self, *, text: str, reason: str) -> None:
        super().__init__(f"invalid version {text!r}: {reason}")
        self.text = text
        self.reason = reason


class RangeError(UserError):
    """A version range does not parse."""

    def __init__(self, *, text: str, reason: str) -> None:
        super().__init__(f"invalid version range {text!r}: {reason}")
        self.text = text
        self.reason = reason

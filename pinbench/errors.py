"""The project's errors: one base class, each error carries its data as typed attributes.

The CLI (and later the REST API) turns them into a message and an exit code / HTTP status in
one place. ``UserError`` subclasses are the caller's fault (bad input, not found, conflict):
exit code 1. ``SystemFailure`` subclasses are ours or the environment's: exit code 3.
"""

from __future__ import annotations

from typing import Any, ClassVar


def _rebuilt(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """An error as ``Picklable.__reduce__`` packed it, made without calling its constructor."""
    error = cls.__new__(cls, *args)
    error.args = args  # OSError's ``__new__`` leaves them to an ``__init__`` it overrides
    error.__dict__.update(state)
    return error


class Picklable:
    """Mixin for an exception class: it pickles whatever its constructor's shape.

    Python pickles an exception as ``cls(*args)``, and ``args`` holds the message only: a
    keyword-only constructor (``InvalidValue(*, text, reason)``) cannot be called so, and the
    unpickling fails (a process pool, or Ray returning an agent's error, then loses it). Here
    the instance is rebuilt from its class, ``args`` and attributes instead, the constructor
    not called. Errors cross a process boundary as plain data wherever one side may be
    another program (an agent's answer, ``pinbench.cluster``); this keeps pickling them, where
    it happens, from failing."""

    def __reduce__(self) -> tuple[Any, ...]:
        assert isinstance(self, BaseException)
        return _rebuilt, (type(self), self.args, dict(self.__dict__))


class PinbenchError(Picklable, Exception):
    """Base of every error pinbench raises on purpose (each package's base derives from it,
    so every one pickles: ``Picklable``)."""

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

"""Where a command writes a file: the one function that decides what a destination may be
(``destination``), and the one way bytes reach it (``write``, ``write_all``, ``staged``).

Every command and option that writes a file takes its path through here (decision 289):

- a regular file, or a name not taken in an existing folder: the bytes go to a temp file
  beside it (same folder, ``O_EXCL``), then renamed into place. An existing file is replaced
  only with ``force`` (``--force``); a name taken meanwhile is never replaced without it (a
  hard link fails where the name is taken). A symbolic link to a file is followed: the file
  it names is replaced, the link kept.
- ``-`` (where the command takes it): standard output; ``/dev/stdout``, ``/dev/stderr``,
  ``/dev/fd/N`` and ``/proc/self/fd/N``: the descriptor already open, written through.
- a character device (``/dev/null``, a terminal) or a FIFO: opened for writing in place
  (never created, truncated or replaced) once all the bytes are made.
- ``append`` (a job summary): a regular file is appended to, or created.
- anything else is refused naming why, before anything is made: a folder, a socket, a
  block device, a dangling link, a missing folder, a ``-`` the command does not take.

Nothing reaches a destination until the whole content is made: what a command streams
(``staged``) goes to the temp file, or, for a device, a pipe or a descriptor, to an
anonymous temporary file first. A refusal leaves no temp file behind.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from pinbench.errors import UserError

Kind = Literal["file", "stream", "descriptor"]
_DESCRIPTOR = re.compile(r"/(?:dev/fd|proc/self/fd)/(\d+)")
_NAMED_DESCRIPTORS = {"/dev/stdout": 1, "/dev/stderr": 2}
STDOUT = "-"


class DestinationRefused(UserError):
    """A file cannot be written where asked; nothing was written."""

    def __init__(self, *, option: str, path: str, reason: str) -> None:
        super().__init__(f"{option} {path}: {reason}" if option else f"{path}: {reason}")
        self.option = option
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Destination:
    """A checked destination (``destination`` made it)."""

    given: str
    """The path as given (what messages name)."""
    option: str
    """The option or argument that named it (``-o``, ``--html``, ``DIR``), for messages."""
    kind: Kind
    target: Path | None
    """The file (a link's target) or device written; None for a descriptor."""
    fd: int | None
    """The descriptor written, for ``-`` and ``/dev/stdout``-like names."""
    existed: bool
    force: bool
    append: bool

    def refused(self, reason: str) -> DestinationRefused:
        return DestinationRefused(option=self.option, path=self.given, reason=reason)


def destination(
    path: Path | str,
    *,
    option: str,
    force: bool = False,
    dash: bool = False,
    append: bool = False,
) -> Destination:
    """What ``path`` (named by ``option``) may be written as, or ``DestinationRefused``.
    ``dash``: the command takes ``-`` for standard output; ``append``: a file is appended to
    (never replaced, so ``force`` does not apply)."""
    given = str(path)

    def made(kind: Kind, target: Path | None, fd: int | None, existed: bool) -> Destination:
        return Destination(given, option, kind, target, fd, existed, force, append)

    def refused(reason: str) -> DestinationRefused:
        return DestinationRefused(option=option, path=given, reason=reason)

    if given == STDOUT:
        if not dash:
            raise refused(f"'-' (standard output) is not taken by {option}: name a file")
        return made("descriptor", None, 1, True)
    absolute = os.path.abspath(given)
    number = _NAMED_DESCRIPTORS.get(absolute)
    match = _DESCRIPTOR.fullmatch(absolute)
    if number is None and match:
        number = int(match.group(1))
    if number is not None:
        try:
            os.fstat(number)
        except OSError:
            raise refused(f"descriptor {number} is not open") from None
        return made("descriptor", None, number, True)
    try:
        mode = os.stat(given).st_mode
    except (FileNotFoundError, NotADirectoryError):
        _check_missing(given, refused)
        return made("file", Path(os.path.realpath(given)), None, False)
    except OSError as exc:
        raise refused(_reason(exc)) from None
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return made("stream", Path(given), None, True)
    if not stat.S_ISREG(mode):
        raise refused(f"it is {_what(mode)}: name a file")
    if not (force or append):
        raise refused("the file exists (give --force to replace it)")
    return made("file", Path(os.path.realpath(given)), None, True)


def folder(path: Path | str, *, option: str, parents: bool = False) -> Path:
    """A folder a command writes files into: an existing folder, or one created now in an
    existing folder (with ``parents``, its missing folders too); anything else, a dangling
    link included, ``DestinationRefused`` naming why."""
    given = str(path)

    def refused(reason: str) -> DestinationRefused:
        return DestinationRefused(option=option, path=given, reason=reason)

    if given == STDOUT:
        raise refused(f"'-' (standard output) is not taken by {option}: name a folder")
    try:
        mode = os.stat(given).st_mode
    except (FileNotFoundError, NotADirectoryError):
        if not parents:
            _check_missing(given, refused)
        elif os.path.islink(given):
            raise refused(
                f"it is a symbolic link to {os.readlink(given)}, which does not exist"
            ) from None
        try:
            os.makedirs(given) if parents else os.mkdir(given)
        except OSError as exc:
            raise refused(f"it cannot be made ({_reason(exc)})") from None
        return Path(given)
    except OSError as exc:
        raise refused(_reason(exc)) from None
    if not stat.S_ISDIR(mode):
        raise refused(f"it is {_what(mode)}, not a folder")
    return Path(given)


def distinct(dests: Sequence[Destination]) -> None:
    """Refused when two of ``dests`` name one file (one would be left of the two)."""
    seen: dict[Path, Destination] = {}
    for dest in dests:
        if dest.kind != "file" or dest.target is None:
            continue
        first = seen.setdefault(dest.target, dest)
        if first is not dest:
            raise dest.refused(f"{first.option} {first.given} names the same file")


def write(dest: Destination, data: bytes) -> None:
    """``data`` written to ``dest`` whole, or ``DestinationRefused`` and nothing written."""
    write_all([(dest, data)])


def write_all(items: Sequence[tuple[Destination, bytes]]) -> None:
    """Each of ``items`` written: every file's temp first, then each put in place (so one
    refused before placing leaves every destination as it was)."""
    stages: list[_Stage] = []
    try:
        for dest, data in items:
            stages.append(_Stage(dest))
            stages[-1].file.write(data)
        for one in stages:
            one.finish()
    finally:
        for one in stages:
            one.discard()


@contextmanager
def staged(dest: Destination) -> Iterator[BinaryIO]:
    """A file to write ``dest``'s content to (and read back, to check it); put in place
    when the block ends without an exception, discarded otherwise."""
    one = _Stage(dest)
    try:
        yield one.file
        one.finish()
    finally:
        one.discard()


class _Stage:
    """The content of one destination while it is made: a temp file beside a regular file,
    else an anonymous temporary file copied to the device, pipe or descriptor at the end."""

    def __init__(self, dest: Destination) -> None:
        self.dest = dest
        self.temp: Path | None = None
        if dest.kind == "file" and not dest.append:
            assert dest.target is not None
            self.temp = dest.target.with_name(f".{dest.target.name}.{secrets.token_hex(4)}.tmp")
            try:
                fd = os.open(self.temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            except OSError as exc:
                self.temp = None
                raise dest.refused(_reason(exc)) from None
            self.file: BinaryIO = os.fdopen(fd, "w+b")
        else:
            self.file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by discard)

    def finish(self) -> None:
        dest = self.dest
        self.file.flush()
        try:
            if self.temp is not None:
                os.fsync(self.file.fileno())
                self.file.close()
                _place(self.temp, dest)
                self.temp = None
            else:
                self.file.seek(0)
                _deliver(self.file, dest)
        except DestinationRefused:
            raise
        except OSError as exc:
            raise dest.refused(_reason(exc)) from None

    def discard(self) -> None:
        self.file.close()
        if self.temp is not None:
            self.temp.unlink(missing_ok=True)
            self.temp = None


def _place(temp: Path, dest: Destination) -> None:
    """``temp`` renamed to the destination's file; only over a regular file that was there
    and with ``force``; never over a name taken meanwhile without it."""
    assert dest.target is not None
    target = dest.target
    if dest.existed and dest.force:
        try:
            mode = os.lstat(target).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            raise dest.refused(f"it became {_what(mode)} meanwhile: not replaced")
        if mode is not None:
            os.chmod(temp, stat.S_IMODE(mode))
        os.replace(temp, target)
        return
    try:
        os.link(temp, target)
    except FileExistsError:
        raise dest.refused("a file of that name appeared meanwhile: not replaced") from None
    except OSError:  # no hard links on this file system: the check before is all there is
        if os.path.lexists(target):
            raise dest.refused("a file of that name appeared meanwhile: not replaced") from None
        os.replace(temp, target)
        return
    temp.unlink()


def _deliver(source: BinaryIO, dest: Destination) -> None:
    """The staged bytes written through to a device, a pipe, a descriptor or (``append``)
    the end of a file, which is never replaced."""
    if dest.kind == "descriptor":
        assert dest.fd is not None
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        if dest.fd == 1 and getattr(sys.stdout, "buffer", None) is not None:
            shutil.copyfileobj(source, sys.stdout.buffer)
            sys.stdout.buffer.flush()
            return
        with os.fdopen(os.dup(dest.fd), "wb") as out:
            shutil.copyfileobj(source, out)
        return
    assert dest.target is not None
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC
    if dest.kind == "file":  # append
        flags |= os.O_APPEND | os.O_CREAT
    fd = os.open(dest.target, flags, 0o666)
    with os.fdopen(fd, "wb") as out:
        mode = os.fstat(fd).st_mode
        wanted = stat.S_ISREG(mode) if dest.kind == "file" else _is_stream(mode)
        if not wanted:
            raise dest.refused(f"it became {_what(mode)} meanwhile: nothing written")
        try:
            shutil.copyfileobj(source, out)
            out.flush()
        except BrokenPipeError:
            raise dest.refused("the pipe's reader closed it before all was written") from None


def _is_stream(mode: int) -> bool:
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _check_missing(given: str, refused: Callable[[str], DestinationRefused]) -> None:
    """A name that is not there may be made only in an existing folder, and never through a
    dangling symbolic link."""
    if os.path.islink(given):
        raise refused(f"it is a symbolic link to {os.readlink(given)}, which does not exist")
    parent = os.path.dirname(os.path.abspath(given))
    try:
        mode = os.stat(parent).st_mode
    except FileNotFoundError:
        raise refused(f"the folder {parent} does not exist") from None
    except OSError as exc:
        raise refused(_reason(exc)) from None
    if not stat.S_ISDIR(mode):
        raise refused(f"{parent} is {_what(mode)}, not a folder")


def _what(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISFIFO, "a pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a file"


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)

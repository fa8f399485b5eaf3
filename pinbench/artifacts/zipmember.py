"""One member of a zip archive (a ``.keras`` file, a TorchScript or ``torch.export``
archive) read within a size limit, whatever the archive's own header claims: a zip bomb is
refused, not inflated."""

from __future__ import annotations

import zipfile


class MemberTooLarge(ValueError):
    """A member larger than the reader allows (a plain one-string ``ValueError``: it
    pickles)."""


def read_member(archive: zipfile.ZipFile, name: str, *, limit: int) -> bytes:
    """The bytes of member ``name``; ``MemberTooLarge`` past ``limit`` bytes (as declared or
    as inflated), ``KeyError`` when there is no such member."""
    info = archive.getinfo(name)
    if info.file_size > limit:
        raise MemberTooLarge(f"{name} is {info.file_size} bytes: at most {limit} are read")
    with archive.open(info) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise MemberTooLarge(f"{name} inflates past {limit} bytes")
    return data

"""Which of a dataset's files are its samples, in which order, and what an ``imagefolder``
layout says their classes are: pure functions of the manifest's paths (no file is read), shared
by the manifest's validation, publishing and the evaluator.

A per-file dataset (``data.format`` ``images`` or ``npy-files``) names a folder; its samples
are the files under that folder with the format's suffixes, in code-point order of their paths.
Any other file under the folder is refused (unless it is the labels or class-names file), so a
stray file never silently joins or leaves the samples.
"""

from __future__ import annotations

from collections.abc import Iterable

SUFFIXES = {
    "images": (".jpg", ".jpeg", ".png", ".webp", ".bmp"),
    "npy-files": (".npy",),
}
"""Sample file suffixes per ``data.format`` (compared case-insensitively)."""

PER_FILE = tuple(SUFFIXES)
"""The ``data.format`` values whose samples are files of their own."""


class LayoutError(ValueError):
    """A dataset's files do not make the layout its manifest declares."""


def folder_prefix(folder: str) -> str:
    """``photos`` -> ``photos/``; ``.`` (the artifact's root) -> ``""``."""
    return "" if folder == "." else folder + "/"


def sample_paths(
    data_format: str, folder: str, paths: Iterable[str], *, extra: set[str]
) -> list[str]:
    """The sample files of a per-file dataset, in order; ``extra`` are the paths allowed under
    the folder without being samples (the labels and class-names files)."""
    prefix = folder_prefix(folder)
    suffixes = SUFFIXES[data_format]
    out = []
    for path in paths:
        if not path.startswith(prefix) or path in extra:
            continue
        if not path.lower().endswith(suffixes):
            raise LayoutError(
                f"file {path!r} is under the data folder {folder!r} but is not a {data_format} "
                f"sample ({', '.join(suffixes)}): move it out of the folder"
            )
        out.append(path)
    if not out:
        raise LayoutError(
            f"the data folder {folder!r} holds no {data_format} sample "
            f"({', '.join(suffixes)}) among the files"
        )
    return sorted(out)


def imagefolder_class(folder: str, path: str) -> str:
    """The class of a sample in an imagefolder layout: the first folder below the data folder
    (``photos/tabby/1.jpg`` -> ``tabby``); a sample directly in the data folder has none."""
    rest = path[len(folder_prefix(folder)) :]
    head, sep, _ = rest.partition("/")
    if not sep:
        raise LayoutError(
            f"sample {path!r} is directly in the data folder {folder!r}: an imagefolder layout "
            "puts each sample in a folder named after its class"
        )
    return head

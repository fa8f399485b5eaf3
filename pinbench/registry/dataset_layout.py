"""Which of a dataset's files are its samples, in which order, and what an ``imagefolder``
layout says their classes are: pure functions of the manifest's paths (no file is read), shared
by the manifest's validation, publishing and the evaluator.

A per-file dataset (``data.format`` ``images``, ``npy-files``, ``audio`` or ``files``) names a
folder; its samples are the files under that folder with the format's suffixes (``files``: every
file), in code-point order of their paths. Any other file under the folder is refused (unless
it is the labels or class-names file), so a stray file never silently joins or leaves the
samples. A ``masks`` layout (segmentation) puts
one mask PNG per sample file in a folder of its own, likewise nothing else (``mask_paths``).
"""

from __future__ import annotations

from collections.abc import Iterable

SUFFIXES = {
    "images": (".jpg", ".jpeg", ".png", ".webp", ".bmp"),
    "npy-files": (".npy",),
    "audio": (".wav",),
}
"""Sample file suffixes per ``data.format`` (compared case-insensitively)."""

ANY_FILE = "files"
"""The ``data.format`` whose samples are files of any kind: every file under its folder."""
PER_FILE = (*SUFFIXES, ANY_FILE)
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
    suffixes = SUFFIXES.get(data_format, ())
    out = []
    for path in paths:
        if not path.startswith(prefix) or path in extra:
            continue
        if data_format != ANY_FILE and not path.lower().endswith(suffixes):
            raise LayoutError(
                f"file {path!r} is under the data folder {folder!r} but is not a {data_format} "
                f"sample ({', '.join(suffixes)}): move it out of the folder"
            )
        out.append(path)
    if not out:
        kinds = f" ({', '.join(suffixes)})" if suffixes else ""
        raise LayoutError(
            f"the data folder {folder!r} holds no {data_format} sample{kinds} among the files"
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


def mask_path(sample: str, data_folder: str, masks_folder: str) -> str:
    """The mask of a sample file in a ``masks`` layout: the same path relative to the masks
    folder as the sample's relative to the data folder, its suffix replaced by ``.png``
    (``photos/a/b.jpg`` with data ``photos`` and masks ``masks`` -> ``masks/a/b.png``)."""
    rest = sample[len(folder_prefix(data_folder)) :]
    stem, dot, _ = rest.rpartition(".")
    return folder_prefix(masks_folder) + (stem if dot else rest) + ".png"


def _inside(path: str, folder: str) -> bool:
    return folder == "." or path == folder or path.startswith(folder + "/")


def mask_paths(
    samples: list[str], data_folder: str, masks_folder: str, paths: Iterable[str]
) -> list[str]:
    """Each sample's mask file, in sample order: the masks folder is apart from the data folder
    (neither inside the other) and holds exactly one ``.png`` per sample file and nothing
    else, so no sample goes unscored and no stray mask is silently ignored."""
    if _inside(masks_folder, data_folder) or _inside(data_folder, masks_folder):
        raise LayoutError(
            f"the masks folder {masks_folder!r} and the data folder {data_folder!r} overlap: "
            "keep the masks in a folder of their own beside the data folder"
        )
    wanted: dict[str, str] = {}
    for sample in samples:
        mask = mask_path(sample, data_folder, masks_folder)
        if mask in wanted:
            raise LayoutError(
                f"sample files {wanted[mask]!r} and {sample!r} would share the mask {mask!r}: "
                "give each sample a file name of its own (before the suffix)"
            )
        wanted[mask] = sample
    prefix = folder_prefix(masks_folder)
    held = {p for p in paths if p.startswith(prefix)}
    stray = sorted(held - set(wanted))
    if stray:
        raise LayoutError(
            f"file {stray[0]!r} is under the masks folder {masks_folder!r} but is the mask of "
            f"no sample file ({len(stray)} such file(s); sample {{data}}/a/b.jpg has mask "
            f"{{masks}}/a/b.png): remove it or add its sample"
        )
    missing = [m for m in wanted if m not in held]
    if missing:
        raise LayoutError(
            f"sample file {wanted[missing[0]]!r} has no mask: {missing[0]!r} is not among the "
            f"files ({len(missing)} mask(s) missing)"
        )
    return list(wanted)

"""A segmentation dataset's labels section from its masks folder: how many classes the masks
index, from ``--classes``, else the class-names file, else the mask values themselves.

The masks are read as a run reads them (``tasks.segmentation.masks.read_mask``); the layout
(one PNG per sample file, nothing else) and each mask's size and values are checked after, as
publishing checks them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pinbench.authoring.errors import AuthoringError


class MasksRefused(AuthoringError):
    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def mask_files(folder: Path) -> list[Path]:
    """Every file under the masks ``folder``, in path order (a stray one is refused by the
    layout check, naming it, rather than left out here)."""
    found = sorted((p for p in folder.rglob("*") if p.is_file()), key=lambda p: p.parts)
    if not found:
        raise MasksRefused(path=str(folder), reason="the masks folder holds no files")
    return found


def masks_classes(
    folder: Path,
    masks: Sequence[Path],
    *,
    classes: int | None,
    names: Path | None,
    ignore_index: int | None,
    notes: list[str],
) -> int:
    """The class count of the masks labels: ``classes`` when given, else as many as ``names``
    lists, else one more than the largest mask value that is not ``ignore_index`` (said in
    ``notes``: a class no mask holds is beyond what the values show)."""
    if classes is not None:
        return classes
    from pinbench.worker.labels import LabelProblem, parse_class_names, read_label_text

    if names is not None:
        try:
            return len(parse_class_names(read_label_text(names, str(names)), path=str(names)).names)
        except LabelProblem as exc:
            raise MasksRefused(path=exc.path, reason=exc.reason) from None
    from pinbench.tasks.segmentation.masks import read_mask

    largest = -1
    pngs = [p for p in masks if p.suffix == ".png"]  # any other file: the layout check names it
    if not pngs:
        raise MasksRefused(
            path=str(folder),
            reason=f"holds no .png file ({masks[0].name}, ...): each sample's mask is a PNG at "
            "its path with the suffix .png (images/a/b.jpg -> masks/a/b.png)",
        )
    for path in pngs:
        try:
            values = read_mask(path, where=str(path))
        except LabelProblem as exc:
            raise MasksRefused(path=exc.path, reason=exc.reason) from None
        counted = values[values != ignore_index] if ignore_index is not None else values
        if counted.size:
            largest = max(largest, int(counted.max()))
    if largest < 0:
        raise MasksRefused(
            path=str(folder),
            reason=f"every pixel of every mask is the ignore_index {ignore_index}: nothing to "
            "score",
        )
    notes.append(
        f"labels.classes is {largest + 1}, one more than the largest mask value ({largest}): "
        "give --classes if the model scores more classes, --names for their names, and "
        "--ignore-index for a value no metric counts (Pascal VOC's borders are 255)"
    )
    return largest + 1

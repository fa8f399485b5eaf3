"""The twelve statistics pycocotools' ``COCOeval.summarize`` gives, under the names a run
records them by: which entry of ``COCOeval.stats`` each is, how people read it, and the area
range it counts, so that the task's metric list (``task``), the scoring (``coco``) and the
reason a metric is undefined all come from one table.

AP is averaged over the IoU thresholds .50:.05:.95 (AP50 and AP75 at one threshold), AR over
the same thresholds; both over the categories whose ground truth counts in the area range
(an annotation that is not ``iscrowd`` whose ``area`` lies in the range, both ends included).
AP and the AR of an area range use up to 100 detections per image and category; AR1 and AR10
the first 1 and 10. Box statistics are named as here; instance-mask (``segm``) ones carry a
``mask_`` prefix. ``map``, ``map50`` and ``recall`` (AR@100) were the only three recorded
before (decision 165): their names are kept, so that earlier runs compare with new ones.
"""

from __future__ import annotations

from dataclasses import dataclass

AREAS: dict[str, tuple[float, float]] = {
    "all": (0.0, 1e5**2),
    "small": (0.0, 32.0**2),
    "medium": (32.0**2, 96.0**2),
    "large": (96.0**2, 1e5**2),
}
"""pycocotools' ``Params.areaRng`` by its ``areaRngLbl``: ``area`` in pixels, both ends
included (an object of exactly 32² pixels counts as small and as medium)."""

MASK_PREFIX = "mask_"


@dataclass(frozen=True, slots=True)
class Stat:
    """One of ``COCOeval.stats``."""

    name: str
    """Its key in a run's metrics (the box statistic's; masks add ``MASK_PREFIX``)."""
    index: int
    """Its position in ``COCOeval.stats``."""
    label: str
    """How people read it."""
    area: str
    """The area range it counts (a key of ``AREAS``)."""

    def undefined_reason(self) -> str:
        """Why pycocotools gives -1 for it: no category has ground truth that counts."""
        low, high = AREAS[self.area]
        return (
            f"no ground-truth object in the {self.area} range (area {low:,.0f} to {high:,.0f} "
            "pixels, not iscrowd)"
        )


STATS = (
    Stat("map", 0, "mAP", "all"),
    Stat("map50", 1, "mAP@.5", "all"),
    Stat("map75", 2, "mAP@.75", "all"),
    Stat("map_small", 3, "mAP small", "small"),
    Stat("map_medium", 4, "mAP medium", "medium"),
    Stat("map_large", 5, "mAP large", "large"),
    Stat("ar1", 6, "AR@1", "all"),
    Stat("ar10", 7, "AR@10", "all"),
    Stat("recall", 8, "AR@100", "all"),
    Stat("ar_small", 9, "AR small", "small"),
    Stat("ar_medium", 10, "AR medium", "medium"),
    Stat("ar_large", 11, "AR large", "large"),
)
"""In ``COCOeval.stats`` order (pycocotools' printed summary's)."""

MASK_STATS = tuple(Stat(MASK_PREFIX + s.name, s.index, f"mask {s.label}", s.area) for s in STATS)
"""The same twelve of ``iouType="segm"``: ``mask_map`` ... ``mask_ar_large``."""

BY_NAME = {s.name: s for s in (*STATS, *MASK_STATS)}

"""Errors of the detection components: each names what is wrong and carries it as data."""

from __future__ import annotations

from pinbench.errors import UserError


class UnknownBoxFormat(UserError):
    def __init__(self, *, name: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown box format {name!r}: expected one of {', '.join(known)}")
        self.name = name
        self.known = known


class UnknownLayout(UserError):
    def __init__(self, *, name: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown detection layout {name!r}: expected one of {', '.join(known)}")
        self.name = name
        self.known = known


class BadDetectorOutput(UserError):
    """A detector's output does not have the shape its declared layout says."""

    def __init__(self, *, layout: str, shape: tuple[int, ...], reason: str) -> None:
        super().__init__(f"detector output of shape {list(shape)} for layout {layout!r}: {reason}")
        self.layout = layout
        self.shape = shape
        self.reason = reason


class BadTransform(UserError):
    """A pre-processing geometry that cannot be applied (an empty image, a crop too large)."""

    def __init__(self, *, step: str, reason: str) -> None:
        super().__init__(f"box transform {step}: {reason}")
        self.step = step
        self.reason = reason


class BadGroundTruth(UserError):
    """COCO ground truth that pycocotools would misread or crash on."""

    def __init__(self, *, where: str, reason: str) -> None:
        super().__init__(f"COCO ground truth, {where}: {reason}")
        self.where = where
        self.reason = reason


class BadDetections(UserError):
    """Detections that do not refer to the ground truth's images and categories."""

    def __init__(self, *, index: int, reason: str) -> None:
        super().__init__(f"detection {index}: {reason}")
        self.index = index
        self.reason = reason


class DetectionSetupError(UserError):
    """A detection run that cannot be scored as declared: names the model, output or input
    and what is wrong."""

    def __init__(self, *, what: str, reason: str) -> None:
        super().__init__(f"{what}: {reason}")
        self.what = what
        self.reason = reason

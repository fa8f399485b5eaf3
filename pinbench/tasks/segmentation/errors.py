"""Errors of the segmentation components: each names what is wrong and carries it as data."""

from __future__ import annotations

from pinbench.errors import UserError


class SegmentationSetupError(UserError):
    """A segmentation run that cannot be scored as declared: names the model, output, input or
    dataset and what is wrong."""

    def __init__(self, *, what: str, reason: str) -> None:
        super().__init__(f"{what}: {reason}")
        self.what = what
        self.reason = reason


class BadSegmentationOutput(UserError):
    """A segmentation output whose shape or values its ``segmentation`` section cannot read."""

    def __init__(self, *, output: str, shape: tuple[int, ...], reason: str) -> None:
        super().__init__(f"segmentation output {output!r} of shape {list(shape)}: {reason}")
        self.output = output
        self.shape = shape
        self.reason = reason

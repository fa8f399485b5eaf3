"""What a validated transformation records: its error against the untransformed network, and
both networks' time and peak memory (``details()`` is ``details["transform"]`` of a run)."""

from __future__ import annotations

from typing import Any

import msgspec

from pinbench.errors import UserError
from pinbench.transforms.compare import Comparison


class TransformInvalid(UserError):
    """The transformed network is outside the tolerance of the untransformed one: a failed
    run, its numbers recorded and never reported as a speed."""

    def __init__(self, *, transform: str, reason: str) -> None:
        super().__init__(f"transformation {transform}: {reason}")
        self.transform = transform
        self.reason = reason


GRAPH_SHA256 = "optimized_graph_sha256"
"""The key of ``details["transform"]`` holding the stored optimized graph's sha256 (a blob, the
digest computed by the host from the bytes it stored; ``artifacts.blob_keys.RUN_BLOBS`` lists it).
Runs recorded before decision 180 hold ``graph_sha256`` instead, a digest of a graph that was
never stored: no blob reference."""
LEGACY_GRAPH_SHA256 = "graph_sha256"


class TransformRecord(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """``transform`` the transformation (``TransformSpec.label``) run on ``framework``;
    ``compared``: ``weights after N steps`` (training) or ``outputs of N samples`` (inference);
    ``time_s``/``reference_time_s``: the wall time of the transformed / untransformed network
    over the same work (the N steps, or the N samples' inference); ``peak_bytes`` /
    ``reference_peak_bytes`` their peak memory as ``memory`` says it is measured (None where it
    is not). A graph optimization's transformed ONNX graph is not here: the host stores it
    and adds its digest to the details as ``GRAPH_SHA256`` (decision 180)."""

    transform: str
    framework: str
    compared: str
    comparison: Comparison
    time_s: float
    reference_time_s: float
    peak_bytes: int | None
    reference_peak_bytes: int | None
    memory: str

    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out

    def metrics(self) -> dict[str, float]:
        """The error, and the time and peak memory (those of a valid run only: an invalid
        transformation is never reported as fast or small)."""
        c = self.comparison
        out = {"transform_max_abs_err": c.max_abs_err, "transform_l2_err": c.l2_err}
        if c.max_rel_err is not None:  # undefined where every reference value is 0
            out["transform_max_rel_err"] = c.max_rel_err
        if c.valid:
            out["transform_time_s"] = self.time_s
            out["transform_reference_time_s"] = self.reference_time_s
            if self.peak_bytes is not None:
                out["transform_peak_bytes"] = float(self.peak_bytes)
        return out

    def check(self) -> None:
        """Raise ``TransformInvalid`` when outside the tolerance."""
        reason = self.comparison.reason()
        if reason is not None:
            raise TransformInvalid(transform=self.transform, reason=reason)

"""Segmentation parity: each run's recorded raw output read into its class map as scoring
reads it (``classes.class_maps``, per the run's own model's ``segmentation`` section), and the
share of pixels whose class is the same in both (``runs parity``).

The class maps compared are on the output's grid, before scoring maps them onto each original
image: runs of one model share that grid. Two exports of a model whose outputs differ in form
(logits in one, the argmax in the other) compare, as long as their grids are the same.
"""

from __future__ import annotations

from pinbench.tasks.parity import Agreement, Figure, Incomparable, Recorded, same_samples
from pinbench.tasks.segmentation.classes import ClassMap, class_maps

PIXEL_TOLERANCE = 1e-3
"""The largest share of pixels whose class may differ for the runs to agree (an argmax near a
tie can flip under floating-point reordering)."""


def class_map_of(recorded: Recorded) -> ClassMap:
    """The run's class per pixel on its output's grid, ``(N, H, W)``."""
    found = [
        o
        for o in recorded.model.outputs
        if o.segmentation is not None
        and (recorded.outputs_name is None or str(o.name) == recorded.outputs_name)
    ]
    if len(found) != 1 or found[0].segmentation is None:
        raise Incomparable(
            run=recorded.run, reason="its model declares no one segmentation output it recorded"
        )
    classes = recorded.dataset.labels.classes
    assert classes is not None  # masks labels declare them (the manifest checked)
    output = found[0]
    assert output.segmentation is not None
    return class_maps(recorded.outputs, output.segmentation, str(output.name), classes=classes)


def pixel_parity(reference: Recorded, other: Recorded) -> Agreement:
    """The share of pixels of the same class in both runs, and how many samples agree on
    every pixel; the runs agree when at most ``PIXEL_TOLERANCE`` of the pixels differ."""
    ref, out = class_map_of(reference), class_map_of(other)
    same_samples(ref, out, run=other.run)
    if ref.shape != out.shape:
        raise Incomparable(
            run=other.run,
            reason=f"class maps of shape {list(out.shape)}, the reference's are "
            f"{list(ref.shape)} (another output grid)",
        )
    same = ref == out
    share = float(same.mean()) if same.size else 1.0
    whole = int(same.reshape(len(same), -1).all(axis=1).sum())
    return Agreement(
        (
            Figure("pixels_agree", "same class", share, "fraction"),
            Figure("samples_agree", "samples all same", float(whole), "count"),
            Figure("samples", "samples", float(len(ref)), "count"),
            Figure("pixels", "pixels", float(same.size), "count"),
        ),
        1.0 - share <= PIXEL_TOLERANCE,
        f"at most {PIXEL_TOLERANCE:g} of the pixels of another class",
    )

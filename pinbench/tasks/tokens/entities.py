"""Entities of IOB tags and their precision, recall and F1, as seqeval 1.2's
``precision_score``, ``recall_score`` and ``f1_score`` give them in their **default mode**
(``mode=None``, ``scheme=None``: conlleval's chunking, not the strict IOB2 mode) with
``average='micro'``, computed here (the host imports no seqeval; the tests compare with it).

A sentence's entities (``entities``): a tag is ``O``, ``B-TYPE`` or ``I-TYPE``; an entity
starts at a ``B``, at an ``I`` after an ``O`` (conlleval's leniency: IOB1's start) and at a
tag of another type than the one before; it ends before a ``B`` or an ``O`` and before a tag
of another type. Each entity is (type, first word, last word); one is found when the same
triple is in the truth. Over every sentence, with TP entities found, P predicted and T true:
precision TP / P, recall TP / T, F1 ``2 * p * r / (p + r)`` (0 where both are 0). seqeval
gives 0.0 with a warning where P or T is 0; here the run fails naming the metric."""

from __future__ import annotations

from collections.abc import Sequence

from pinbench.worker.undefined import UndefinedMetric

Entity = tuple[str, int, int]


def entities(tags: Sequence[str]) -> set[Entity]:
    """The entities of one sentence's ``tags`` (each ``O``, ``B-X`` or ``I-X``)."""
    found: set[Entity] = set()
    prev_tag, prev_type, begin = "O", "", 0
    for i, tag in enumerate([*tags, "O"]):
        kind, type_ = tag[0], tag[2:]
        ends = prev_tag in ("B", "I") and (kind in ("B", "O") or prev_type != type_)
        if ends:
            found.add((prev_type, begin, i - 1))
        starts = kind == "B" or (prev_tag == "O" and kind == "I")
        starts = starts or (kind != "O" and prev_type != type_)
        if starts:
            begin = i
        prev_tag, prev_type = kind, type_
    return found


def entity_metrics(
    truth: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]
) -> dict[str, float]:
    """``entity_precision``, ``entity_recall``, ``entity_f1`` and the counts, micro-averaged
    over every sentence (each sentence's two tag lists of one length)."""
    tp = true_count = predicted_count = 0
    for gold, guess in zip(truth, predicted, strict=True):
        assert len(gold) == len(guess)
        g, p = entities(gold), entities(guess)
        tp += len(g & p)
        true_count += len(g)
        predicted_count += len(p)
    if true_count == 0:
        raise UndefinedMetric(
            metric="entity_recall", reason="the ground truth of the scored samples has no entity"
        )
    if predicted_count == 0:
        raise UndefinedMetric(
            metric="entity_precision", reason="the model tagged no entity in the scored samples"
        )
    precision = tp / predicted_count
    recall = tp / true_count
    denominator = precision + recall
    return {
        "entity_f1": 2 * precision * recall / (denominator if denominator else 1.0),
        "entity_precision": precision,
        "entity_recall": recall,
        "entities_count": float(true_count),
        "predicted_entities_count": float(predicted_count),
    }

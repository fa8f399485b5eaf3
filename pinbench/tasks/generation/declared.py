"""What text generation records: its metrics (``pinbench.tasks.metrics``) and its datasets
(``pinbench.tasks.datasets``), as data: what names a run's metrics or checks a dataset reads
them without importing the task."""

from __future__ import annotations

from pinbench.tasks.datasets import Datasets
from pinbench.tasks.metrics import Metric

METRICS = (
    Metric("rouge1", "ROUGE-1"),  # MLPerf's: rouge-score with use_stemmer=True
    Metric("rouge2", "ROUGE-2"),
    Metric("rouge_l", "ROUGE-L", headline=True),
    Metric("rouge1_unstemmed", "ROUGE-1 (no stemming)"),
    Metric("rouge2_unstemmed", "ROUGE-2 (no stemming)"),
    Metric("rouge_l_unstemmed", "ROUGE-L (no stemming)"),
    Metric("exact_match", "exact match"),
    Metric(  # from the references' per-token losses, which only the model gives
        "perplexity",
        "perplexity",
        unit="value",
        exact=False,
        higher_is_better=False,
        by_model=True,
    ),
    Metric("references_count", "references", unit="count"),
)
DATASETS = Datasets(
    ("prompt-references",),
    refuses=("path", "names", "classes"),
    refused="prompt-references labels are the `reference` of each line of the prompts file: "
    "give no path, names or classes",
    generates=True,
)

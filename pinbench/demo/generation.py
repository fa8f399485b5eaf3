"""The demo's generative model: the catalog's tiny GPT-2 (a Hugging Face folder) answering
held-out prompts, timed per token through LoadGen's token API."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from pinbench.catalog import gpt
from pinbench.sdk.registry import Registry

NEW_TOKENS = 16
SCENARIOS = (
    ("accuracy", {"mode": "accuracy"}),
    ("SingleStream", {"name": "SingleStream", "min_duration_ms": 1000, "min_query_count": 48}),
    ("Offline", {"name": "Offline", "min_duration_ms": 1000, "min_query_count": 48}),
)


def generation(reg: Registry, out: Console, step: Callable[[str], None]) -> None:
    """One table: TTFT p50/p99 and TPOT p50 (SingleStream), tokens/s (Offline), ROUGE-L and
    perplexity (accuracy), per framework the model was published for."""
    step(f"text generation: {gpt.NAME} on {gpt.DATASET} ({NEW_TOKENS} new tokens, greedy)")
    metrics: dict[str, dict[str, float]] = {}
    for label, scenario in SCENARIOS:
        request = {
            "model": f"{gpt.NAME}@^1",
            "dataset": f"{gpt.DATASET}@1",
            "generation": {"max_new_tokens": NEW_TOKENS, "stop_at_end": False},
            "scenario": scenario,
        }
        metrics[label] = reg.lock(request)[0].run(runner="local", say=lambda _: None).metrics
    table = Table(
        "framework",
        "TTFT p50",
        "TTFT p99",
        "TPOT p50",
        "tokens/s Offline",
        "ROUGE-L",
        "perplexity",
        box=None,
    )
    single, offline, accuracy = (metrics[s] for s, _ in SCENARIOS[1:] + SCENARIOS[:1])
    table.add_row(
        "transformers (PyTorch)",
        f"{single['ttft_p50_ns'] / 1e6:.2f} ms",
        f"{single['ttft_p99_ns'] / 1e6:.2f} ms",
        f"{single['tpot_p50_ns'] / 1e6:.2f} ms",
        f"{offline['throughput_tps']:,.0f}",
        f"{accuracy['rouge_l']:.4f}",
        f"{accuracy['perplexity']:.1f}",
    )
    out.print(table)

"""The demo's generative model: the catalog's tiny GPT-2 answering held-out prompts, timed per
token through LoadGen's token API, as a Hugging Face folder (transformers) and exported to
ONNX (ONNX Runtime), with the same greedy tokens from both."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from pinbench.catalog import gpt
from pinbench.catalog.gpt_onnx import ONNX_NAME
from pinbench.sdk.registry import Registry

NEW_TOKENS = 16
MODELS = (("transformers (PyTorch)", gpt.NAME), ("ONNX Runtime", ONNX_NAME))
SCENARIOS = (
    ("accuracy", {"mode": "accuracy"}),
    ("SingleStream", {"name": "SingleStream", "min_duration_ms": 1000, "min_query_count": 48}),
    ("Offline", {"name": "Offline", "min_duration_ms": 1000, "min_query_count": 48}),
)


def _run(reg: Registry, model: str, scenario: dict[str, Any]) -> Any:
    request = {
        "model": f"{model}@^1",
        "dataset": f"{gpt.DATASET}@1",
        "generation": {"max_new_tokens": NEW_TOKENS, "stop_at_end": False},
        "scenario": scenario,
    }
    return reg.lock(request)[0].run(runner="local", say=lambda _: None)


def generation(reg: Registry, out: Console, step: Callable[[str], None]) -> None:
    """One row per framework: TTFT p50/p99 and TPOT p50 (SingleStream), tokens/s (Offline),
    the task's headline accuracy (ROUGE-L); then the two frameworks' answers compared."""
    step(f"text generation: {gpt.NAME} on {gpt.DATASET} ({NEW_TOKENS} new tokens, greedy)")
    table = Table("framework", "TTFT p50", "TTFT p99", "TPOT p50", "tokens/s Offline", "accuracy")
    table.box = None
    accuracy_runs = []
    for label, model in MODELS:
        runs = {name: _run(reg, model, scenario) for name, scenario in SCENARIOS}
        accuracy_runs.append(runs["accuracy"])
        single, offline = runs["SingleStream"].metrics, runs["Offline"].metrics
        table.add_row(
            label,
            f"{single['ttft_p50_ns'] / 1e6:.2f} ms",
            f"{single['ttft_p99_ns'] / 1e6:.2f} ms",
            f"{single['tpot_p50_ns'] / 1e6:.2f} ms",
            f"{offline['throughput_tps']:,.0f}",
            runs["accuracy"].headline(),  # the task's own headline: ROUGE-L
        )
    out.print(table)
    reference, other = accuracy_runs
    found = next(p for p in reg.parity(reference.id, [other.id]) if p.run == other.id)
    figures = {f.name: f.value for f in found.agreement.figures}
    verdict = "the same token ids" if found.agreement.agrees else "DIFFERENT token ids"
    out.print(
        f"greedy answers, transformers vs ONNX Runtime: {verdict} "
        f"({figures['answers_differing']:.0f} of {figures['samples']:.0f} answers differ)"
    )

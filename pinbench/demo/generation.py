"""The demo's generative model: one line of the ``engines`` study (``STUDY=engines make
study``): the catalog's tiny LLaMA answering held-out prompts as a Hugging Face folder
(transformers) and converted by ONNX Runtime GenAI's own model builder (the engine), timed per
token through LoadGen's token API, with the same greedy tokens from both. The runs are the
study's own cells (its requests, one thread), in accuracy, SingleStream and Offline."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from pinbench.catalog import llama
from pinbench.sdk.registry import Registry

STUDY = "engines"
ENGINE = "onnxruntime-genai"
"""The engine the demo's catalog converts the tiny LLaMA for (the quickest to convert)."""
LABELS = {"transformers": "transformers (PyTorch)", ENGINE: "ONNX Runtime GenAI"}
SCENARIOS = ("accuracy", "SingleStream", "Offline")


def _cells(reg: Registry) -> dict[tuple[str, str], dict[str, Any]]:
    """The study's requests for the demo's two frameworks and three scenarios, by (framework,
    scenario)."""
    found = {}
    for cell in reg.studies().requests(STUDY, files=False):
        framework = cell["framework"].split("@")[0]
        if framework in LABELS and cell["scenario"] in SCENARIOS:
            found[framework, cell["scenario"]] = cell["request"]
    return found


def generation(reg: Registry, out: Console, step: Callable[[str], None]) -> None:
    """One row per framework: TTFT p50/p99 and TPOT p50 (SingleStream), tokens/s (Offline),
    the task's headline accuracy (ROUGE-L); then the two frameworks' answers compared."""
    requests = _cells(reg)
    new_tokens = requests["transformers", "accuracy"]["generation"]["max_new_tokens"]
    step(
        f"LLM engines, a line of `STUDY={STUDY} make study`: {llama.NAME} in transformers and "
        f"ONNX Runtime GenAI ({new_tokens} new tokens, greedy, one thread)"
    )
    table = Table(
        "framework", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT ÷ transformers",
        "tokens/s Offline", "accuracy", box=None,
    )  # fmt: skip
    accuracy_runs, tpot = [], {}
    for framework, label in LABELS.items():
        runs = {
            name: reg.lock(requests[framework, name])[0].run(runner="local", say=lambda _: None)
            for name in SCENARIOS
        }
        accuracy_runs.append(runs["accuracy"])
        single, offline = runs["SingleStream"].metrics, runs["Offline"].metrics
        tpot[framework] = single["tpot_p50_ns"]
        table.add_row(
            label,
            f"{single['ttft_p50_ns'] / 1e6:.2f} ms",
            f"{single['ttft_p99_ns'] / 1e6:.2f} ms",
            f"{single['tpot_p50_ns'] / 1e6:.3f} ms",
            f"{tpot[framework] / tpot['transformers']:.3f}x",
            f"{offline['throughput_tps']:,.0f}",
            runs["accuracy"].headline(),  # the task's own headline: ROUGE-L
        )
    out.print(table)
    reference, other = accuracy_runs
    found = next(p for p in reg.parity(reference.id, [other.id]) if p.run == other.id)
    figures = {f.name: f.value for f in found.agreement.figures}
    verdict = "the same token ids" if found.agreement.agrees else "DIFFERENT token ids"
    out.print(
        f"greedy answers, transformers vs ONNX Runtime GenAI: {verdict} "
        f"({figures['answers_differing']:.0f} of {figures['samples']:.0f} answers differ)"
    )

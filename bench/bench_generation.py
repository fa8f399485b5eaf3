"""Time to first token (TTFT) and time per output token (TPOT) as pinbench records them,
against a bare loop timing the same model on the same prompts in the same run.

The catalog's tiny GPT-2 (``pinbench catalog build --parts gpt``, trained here) answers its
24 held-out prompts with ``--tokens`` new tokens each (greedy, never stopping early), per
framework:

* transformers: pinbench's SingleStream run (``generation.max_new_tokens``, one prompt per
  LoadGen query, ``Run.token_times()``) against ``model.generate(..., streamer=...)`` called
  directly, the streamer's ``put`` stamping the first token and the last (HF's own loop, the
  KV cache on);
* ONNX Runtime: pinbench's run of the ONNX export against a bare loop over the same
  ``InferenceSession`` (prompt fed one token a step, then the answer; no generate() exists
  for it without onnxruntime-genai).

Both sides run with ``--threads`` intra-op threads (default 1: the request's ``threads`` for
pinbench, ``torch.set_num_threads`` and the session's ``intra_op_num_threads`` for the bare
loops). Reported: the medians over ``--runs`` of each side's per-prompt median TTFT and TPOT
(``(latency - TTFT) / (tokens - 1)``), and pinbench's ratio to the bare loop's; target
(issue 37) <= 1.02 for both, per framework. The two sides alternate within a run.

Run: ``.venv/bin/python -m bench.bench_generation --runs 5`` (``--json``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import Check, Report, check_runs, command_line, log, machine, parser, scratch

TARGET = 1.02
DATASET = "python-doc-prompts@1"


def _prompts(catalog: Path) -> list[list[int]]:
    import json

    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(catalog / "tiny-gpt" / "tokenizer.json"))
    lines = (catalog / "tiny-gpt-prompts" / "prompts.jsonl").read_text().splitlines()
    return [tokenizer.encode(json.loads(line)["prompt"]).ids for line in lines]


def _pinbench(
    registry: Any, model: str, tokens: int, queries: int, threads: int
) -> tuple[float, float]:
    request = {
        "threads": threads,
        "model": model,
        "dataset": DATASET,
        "generation": {"max_new_tokens": tokens, "stop_at_end": False},
        "scenario": {"name": "SingleStream", "min_duration_ms": 0, "min_query_count": queries},
    }
    run = registry.lock(request)[0].run(runner="local", say=lambda _: None)
    latency = run.latencies()
    ttft, count = run.token_times()
    tpot = (latency - ttft) / (count - 1)
    return float(np.median(ttft)), float(np.median(tpot))


def _hf_generate(catalog: Path, prompts: list[list[int]], tokens: int) -> tuple[float, float]:
    import torch
    from transformers import AutoModelForCausalLM

    model: Any = AutoModelForCausalLM.from_pretrained(catalog / "tiny-gpt", local_files_only=True)
    model.eval()

    from transformers.generation.streamers import BaseStreamer

    class Stamps(BaseStreamer):
        def __init__(self) -> None:
            self.times: list[int] = []

        def put(self, value: Any) -> None:
            self.times.append(time.perf_counter_ns())

        def end(self) -> None:
            pass

    firsts, pers = [], []
    with torch.inference_mode():
        for ids in prompts:
            stamps = Stamps()
            start = time.perf_counter_ns()
            model.generate(
                torch.tensor([ids]),
                max_new_tokens=tokens,
                min_new_tokens=tokens,
                do_sample=False,
                streamer=stamps,
            )
            end = time.perf_counter_ns()
            token_times = stamps.times[1:]  # the first put is the prompt
            firsts.append((token_times[0] - start) / 1e9)
            pers.append((end - token_times[0]) / 1e9 / (tokens - 1))
    return float(np.median(firsts)), float(np.median(pers))


def _ort_loop(
    catalog: Path, prompts: list[list[int]], tokens: int, threads: int
) -> tuple[float, float]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        str(catalog / "tiny-gpt-onnx" / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    pasts = [a for a in session.get_inputs() if a.name.startswith("past_")]
    firsts, pers = [], []
    for ids in prompts:
        start = time.perf_counter_ns()
        past = {a.name: np.zeros((1, a.shape[1], 0, a.shape[3]), np.float32) for a in pasts}
        names = [a.name for a in pasts]
        for token in ids:
            got = session.run(None, {"input_ids": np.array([[token]], np.int64), **past})
            past = dict(zip(names, got[1:], strict=True))
        token = int(np.argmax(got[0][0]))
        first = time.perf_counter_ns()
        for _ in range(tokens - 1):
            got = session.run(None, {"input_ids": np.array([[token]], np.int64), **past})
            past = dict(zip(names, got[1:], strict=True))
            token = int(np.argmax(got[0][0]))
        end = time.perf_counter_ns()
        firsts.append((first - start) / 1e9)
        pers.append((end - first) / 1e9 / (tokens - 1))
    return float(np.median(firsts)), float(np.median(pers))


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--tokens", type=int, default=32, help="new tokens per answer (>= 2)")
    p.add_argument(
        "--threads", type=int, default=1, help="intra-op threads, the same on both sides"
    )
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title="Generation: TTFT and TPOT, pinbench's record vs a bare loop, same model",
        command=command_line("bench.bench_generation", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    import torch

    import pinbench
    from pinbench import catalog as builtin

    torch.set_num_threads(args.threads)  # generate()'s; pinbench's runs set the request's

    with scratch(args.tmp, "generation", keep=args.keep) as root:
        log("training the catalog's tiny GPT-2 and exporting it to ONNX")
        built = builtin.build(root / "catalog", ["gpt"])
        registry = pinbench.Registry(root / "home")
        registry.init()
        for manifest in built.manifests:
            registry.publish(manifest)
        prompts = _prompts(root / "catalog")
        sides: dict[str, tuple[str, Callable[[], tuple[float, float]], str]] = {
            "transformers": (
                "text/tiny-gpt@1",
                lambda: _hf_generate(root / "catalog", prompts, args.tokens),
                "generate() + streamer",
            ),
            "onnxruntime": (
                "text/tiny-gpt-onnx@1",
                lambda: _ort_loop(root / "catalog", prompts, args.tokens, args.threads),
                "bare session loop",
            ),
        }
        for model, bare, _ in sides.values():  # once untimed: warm caches
            _pinbench(registry, model, args.tokens, len(prompts), args.threads)
            bare()
        for run in range(runs):
            log(f"run {run + 1}/{runs}")
            for framework, (model, bare, label) in sides.items():
                ttft, tpot = _pinbench(registry, model, args.tokens, len(prompts), args.threads)
                report.metric(f"{framework} pinbench TTFT", "ms").values.append(ttft * 1e3)
                report.metric(f"{framework} pinbench TPOT", "ms").values.append(tpot * 1e3)
                ttft, tpot = bare()
                report.metric(f"{framework} {label} TTFT", "ms").values.append(ttft * 1e3)
                report.metric(f"{framework} {label} TPOT", "ms").values.append(tpot * 1e3)
    for framework, (_, _, label) in sides.items():
        for what in ("TTFT", "TPOT"):
            ours = report.metric(f"{framework} pinbench {what}", "ms").median
            theirs = report.metric(f"{framework} {label} {what}", "ms").median
            ratio = ours / theirs
            report.checks.append(
                Check(f"{framework} {what} ÷ {label}", ratio, "x", f"<= {TARGET}", ratio <= TARGET)
            )
    report.notes.append(
        f"intra-op threads {args.threads} on both sides; per-prompt medians, then the median "
        "over runs; ratios of medians of the same run"
    )
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

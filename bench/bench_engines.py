"""The catalog's tiny LLaMA in each LLM engine beside transformers (issue 87): TTFT and TPOT
(LoadGen's p50s, SingleStream) and tokens per second (LoadGen's, Offline), the same weights in
float32, the same prompts (``python-doc-prompts``), ``--tokens`` new tokens an answer, no
early end, each framework on ``--threads`` intra-op threads (the request's ``threads``; 0
leaves each framework's own default, which for CTranslate2 on this 2-core machine was an
order of magnitude slower a token than one thread).

The catalog's ``llama`` part is built once (trained, then converted by each engine's own
converter), published into a scratch home; each run measures every framework, in an order
that rotates from run to run: a SingleStream run (at least ``--queries`` queries over 2 s) and
an Offline run (the 24 prompts at least twice), each a local sandboxed run. Reported: each
figure per framework, and each engine's over transformers' within a run, as medians over the
runs (a ratio below 1 is faster than transformers for a latency, above 1 for a throughput).

Run: ``.venv/bin/python -m bench.bench_engines --runs 3`` (``--json``).
"""

from __future__ import annotations

from typing import Any

from bench._common import Report, check_runs, command_line, log, machine, parser, scratch

MODELS = {
    "transformers": "text/tiny-llama@1",
    "onnxruntime-genai": "text/tiny-llama-onnxruntime-genai@1",
    "ctranslate2": "text/tiny-llama-ctranslate2@1",
    "openvino-genai": "text/tiny-llama-openvino-genai@1",
    "llama-cpp-python": "text/tiny-llama-llama-cpp-python@1",
}


def _run(registry: Any, model: str, args: Any, scenario: dict[str, Any]) -> Any:
    request = {
        "model": model,
        "dataset": "python-doc-prompts@1",
        "generation": {"max_new_tokens": args.tokens, "stop_at_end": False},
        "scenario": scenario,
        **({"threads": args.threads} if args.threads else {}),
    }
    done = registry.lock(request)[0].run(runner="local")
    if done.status != "succeeded":
        raise SystemExit(f"{model}: {done.info.get('error')}")
    return done.metrics


def main(argv: list[str] | None = None) -> int:
    import pinbench
    from pinbench.catalog import build

    p = parser(__doc__ or "")
    p.add_argument("--tokens", type=int, default=16, help="New tokens an answer (default 16).")
    p.add_argument("--queries", type=int, default=48, help="SingleStream queries at least.")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="The request's threads (each framework's intra-op threads; default 1; 0: each "
        "framework's own default).",
    )
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title="the tiny LLaMA's TTFT, TPOT and tokens per second in each engine and transformers",
        command=command_line("bench.bench_engines", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    with scratch(args.tmp, "engines", keep=args.keep) as root:
        log("building the catalog's llama part (training, then each engine's conversion)")
        catalog = build(root / "catalog", ["llama"])
        registry = pinbench.Registry(root / "home")
        registry.init()
        for manifest in catalog.manifests:
            registry.publish(manifest)
        single = {"name": "SingleStream", "min_duration_ms": 2000, "min_query_count": args.queries}
        offline = {"name": "Offline", "min_duration_ms": 0, "min_query_count": 48}
        names = list(MODELS)
        for run in range(runs):
            log(f"run {run + 1}/{runs}")
            order = names[run % len(names) :] + names[: run % len(names)]
            figures: dict[str, dict[str, float]] = {}
            for name in order:
                m = _run(registry, MODELS[name], args, single)
                o = _run(registry, MODELS[name], args, offline)
                figures[name] = {
                    "TTFT p50": m["ttft_p50_ns"] / 1e6,
                    "TPOT p50": m["tpot_p50_ns"] / 1e6,
                    "tokens per second, Offline": o["throughput_tps"],
                }
            for name in names:
                for figure, value in figures[name].items():
                    unit = "tokens/s" if "second" in figure else "ms"
                    better = "higher" if "second" in figure else "lower"
                    report.metric(f"{figure}, {name}", unit, better=better).values.append(value)
            for name in names[1:]:
                for figure, value in figures[name].items():
                    base = figures["transformers"][figure]
                    better = "higher" if "second" in figure else "lower"
                    report.metric(
                        f"{figure}, {name} / transformers", "x", better=better
                    ).values.append(value / base)
    report.notes += [
        f"threads: {args.threads or 'each framework default'}",
        "LoadGen's own figures of local (sandboxed) runs: TTFT and TPOT p50 of SingleStream, "
        "tokens per second of Offline (batch 1: one prompt at a time in every framework)",
    ]
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

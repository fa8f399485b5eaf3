"""What feeding each clip at its own length saves a speech model's query (issue 86, item 1;
decision 316): a tiny HuBERT classifier (built here, seeded, as ``tests/test_audio_lengths.py``
builds it) on four WAV clips of 0.7-2.3 s, SingleStream, its manifest as ``manifest model``
now writes it (each clip at its own length) beside the same with every clip padded to 10 s,
as it wrote it before (``fit_length``, 160,000 samples).

Each run measures both, which goes first alternating: ``Lockfile.run(runner="local")``, at
least 50 queries over 3 s each. Reported: each side's LoadGen p50 latency and the ratio of the
padded one to the clip's own, within a run, as medians over the runs.

Run: ``.venv/bin/python -m bench.bench_clip_lengths --runs 3`` (``--json``).
"""

from __future__ import annotations

import json
import wave
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import Report, check_runs, command_line, log, machine, parser, scratch

RATE = 16_000
SECONDS = (1.0, 1.5, 2.3, 0.7)
PADDED = RATE * 10


def _folder(root: Path) -> Path:
    import torch
    from transformers import HubertConfig, HubertForSequenceClassification
    from transformers import Wav2Vec2FeatureExtractor as Extractor

    folder = root / "hubert"
    torch.manual_seed(86)
    config = HubertConfig(  # type: ignore[call-arg]
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=24,
        conv_dim=(8, 8), conv_stride=(5, 4), conv_kernel=(10, 8), num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=2, num_labels=3, classifier_proj_size=8,
    )  # fmt: skip
    HubertForSequenceClassification(config).eval().save_pretrained(folder)  # type: ignore[no-untyped-call]
    Extractor(feature_size=1, sampling_rate=RATE, do_normalize=True).save_pretrained(folder)  # type: ignore[no-untyped-call]
    return folder


def _clips(root: Path) -> list[dict[str, Any]]:
    import hashlib

    rng = np.random.default_rng(2026)
    entries = []
    for i, seconds in enumerate(SECONDS):
        t = np.arange(int(RATE * seconds)) / RATE
        x = 0.3 * np.sin(2 * np.pi * (180 + 60 * i) * t) + 0.05 * rng.standard_normal(t.size)
        path = root / "clips" / f"c{i % 3}" / f"{i}.wav"
        path.parent.mkdir(parents=True, exist_ok=True)
        with wave.open(str(path), "wb") as f:
            f.setnchannels(1)
            f.setsampwidth(2)
            f.setframerate(RATE)
            f.writeframes(np.clip(np.round(x * 32767), -32768, 32767).astype("<i2").tobytes())
        rel = str(path.relative_to(root))
        entries.append({"path": rel, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()})
    return entries


def _publish(registry: Any, root: Path, data: dict[str, Any]) -> None:
    path = root / f"{data['name'].replace('/', '-')}.json"
    path.write_text(json.dumps(data))
    registry.publish(path)


def main(argv: list[str] | None = None) -> int:
    import pinbench
    from pinbench.authoring.model import model_manifest
    from pinbench.catalog import frameworks

    p = parser(__doc__ or "")
    args = p.parse_args(argv)
    runs = check_runs(args)
    report = Report(
        title="a speech classifier's SingleStream p50: each clip at its own length, or at 10 s",
        command=command_line("bench.bench_clip_lengths", argv),
        runs=runs,
        machine=machine(args.tmp),
    )
    with scratch(args.tmp, "clip-lengths", keep=args.keep) as root:
        registry = pinbench.Registry(root / "home")
        registry.init()
        registry.publish(frameworks.write(root, "transformers"))
        own = model_manifest([_folder(root)], base=root).data
        own |= {"name": "speech/own", "version": "1.0.0"}
        padded = json.loads(json.dumps(own)) | {"name": "speech/padded"}
        values = padded["inputs"][0]
        values["steps"].append({"fit_length": {"length": PADDED, "value": 0.0}})
        values["shape"] = [PADDED]
        del values["pad_batch"]
        for data in (own, padded):
            _publish(registry, root, data)
        files = _clips(root)
        _publish(registry, root, {
            "kind": "dataset", "name": "speech/clips", "version": "1.0.0",
            "task": "classification", "data": {"format": "audio", "path": "clips"},
            "labels": {"format": "imagefolder"}, "files": files,
        })  # fmt: skip
        scenario = {"mode": "performance", "name": "SingleStream", "min_duration_ms": 3000,
                    "min_query_count": 50}  # fmt: skip
        for run in range(runs):
            log(f"run {run + 1}/{runs}")
            sides = ["own", "padded"] if run % 2 == 0 else ["padded", "own"]
            p50 = {}
            for side in sides:
                request = {"model": f"speech/{side}@1", "dataset": "speech/clips@1",
                           "scenario": scenario}  # fmt: skip
                done = registry.lock(request)[0].run(runner="local")
                if done.status != "succeeded":
                    raise SystemExit(f"{side}: {done.info.get('error')}")
                p50[side] = float(done.metrics["latency_p50_ns"]) / 1e6
                report.metric(f"p50, {side}", "ms").values.append(p50[side])
            report.metric("padded / own", "x", better="higher").values.append(
                p50["padded"] / p50["own"]
            )
    report.notes += [
        "LoadGen's p50 of SingleStream queries over the four clips, a local (sandboxed) run "
        "each; `own` is what `manifest model` writes now, `padded` adds fit_length to 10 s"
    ]
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

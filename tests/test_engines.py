"""LLM engines as frameworks (issue 87): the catalog's tiny LLaMA (``text/tiny-llama``, a
Hugging Face folder run by transformers) converted by each engine's own converter, run by the
engine in the sandbox. The greedy answers are checked against transformers' own ``generate``
here, prompt by prompt; every engine's token latencies are LoadGen's; the conversions are the
converters' bytes, again; an engine folder that would make the engine load anything beyond
its model is refused when it is published."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import pinbench
from pinbench.errors import PinbenchError

DATASET = "python-doc-prompts@1"
ENGINES = {"onnxruntime-genai": "text/tiny-llama-onnxruntime-genai@1"}
ENGINES["ctranslate2"] = "text/tiny-llama-ctranslate2@1"
ENGINES["openvino-genai"] = "text/tiny-llama-openvino-genai@1"
ENGINES["llama-cpp-python"] = "text/tiny-llama-llama-cpp-python@1"
QUANTISED = ["ctranslate2-int8", "llama-cpp-python-q8"]
TRANSFORMERS = "text/tiny-llama@1"
NEW = 12


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory, llama_catalog: Path) -> Iterator[Any]:
    """A home with the tiny LLaMA in transformers and in every engine."""
    reg = pinbench.Registry(tmp_path_factory.mktemp("engines-home"))
    reg.init()
    for name in (
        "framework-transformers",
        *(f"framework-{engine}" for engine in ENGINES),
        "dataset-python-doc-prompts",
        "model-tiny-llama",
        *(f"model-tiny-llama-{engine}" for engine in [*ENGINES, *QUANTISED]),
    ):
        reg.publish(llama_catalog / f"{name}.yaml")
    yield reg


def _run(registry: Any, model: str, generation: dict[str, Any], **scenario: Any) -> Any:
    request = {"model": model, "dataset": DATASET, "generation": generation, "scenario": scenario}
    return registry.lock(request)[0].run(runner="local")


def _answers(run: Any, where: Path) -> Any:
    path = where / f"outputs-{run.id}.npy"
    run.export_outputs(path)
    return np.load(path, allow_pickle=False)


def test_every_engine_answers_with_transformers_greedy_tokens_and_parity_says_so(
    registry: Any, llama_catalog: Path, tmp_path: Path
) -> None:
    """Each engine's greedy token ids are ``generate(do_sample=False)``'s on the Hugging Face
    folder, prompt by prompt; its perplexity of the references is transformers'; ``runs
    parity`` finds no answer differing."""
    from importlib.metadata import version

    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM

    spec = {"max_new_tokens": NEW, "stop_at_end": False}
    reference = _run(registry, TRANSFORMERS, spec, mode="accuracy")
    folder = llama_catalog / "tiny-llama"
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()  # type: ignore[no-untyped-call]
    prompts = [
        json.loads(line)["prompt"]
        for line in (llama_catalog / "tiny-gpt-prompts" / "prompts.jsonl").read_text().splitlines()
    ]
    expected = []
    for prompt in prompts:
        encoded = torch.tensor([tokenizer.encode(prompt).ids])
        with torch.inference_mode():
            out = model.generate(
                encoded, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False, use_cache=True
            )
        expected.append(out[0, encoded.shape[1] :].tolist())
    assert _answers(reference, tmp_path).tolist() == expected
    runs = {engine: _run(registry, ref, spec, mode="accuracy") for engine, ref in ENGINES.items()}
    for engine, run in runs.items():
        assert run.info["framework"].split("@")[0] == engine
        assert version(engine).startswith(run.info["framework"].split("@")[1])
        assert _answers(run, tmp_path).tolist() == expected, engine
        assert run.metrics["perplexity"] == pytest.approx(
            reference.metrics["perplexity"], rel=1e-5
        ), engine
    for parity in registry.parity(reference.id, [r.id for r in runs.values()]):
        if parity.run == reference.id:
            continue
        figures = {f.name: f.value for f in parity.agreement.figures}
        assert parity.agreement.agrees and figures["answers_differing"] == 0, parity.run


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("scenario", ["SingleStream", "Server", "Offline"])
def test_every_engines_token_figures_are_loadgens(
    registry: Any, engine: str, scenario: str
) -> None:
    """TTFT and TPOT (SingleStream, Server) and tokens per second (Offline) are LoadGen's own,
    from its detail log; pinbench's own per-token figures sit beside them."""
    settings: dict[str, Any] = {"min_duration_ms": 200, "min_query_count": 12}
    if scenario == "Server":
        settings["target_qps"] = 20
    run = _run(
        registry,
        ENGINES[engine],
        {"max_new_tokens": 6, "stop_at_end": False},
        name=scenario,
        **settings,
    )
    assert run.status == "succeeded"
    m, loadgen = run.metrics, run.view()["details"]["loadgen"]
    assert m["tokens_per_sample_mean_count"] == 6
    assert m["framework_throughput_tps"] > 0
    if scenario == "Offline":
        assert m["throughput_tps"] == pytest.approx(loadgen["result_tokens_per_second"], rel=1e-3)
        return
    for spelled, key in (("50.00", "p50"), ("90.00", "p90"), ("99.00", "p99")):
        assert m[f"ttft_{key}_ns"] == loadgen[f"result_first_token_{spelled}_percentile_latency_ns"]
        assert (
            m[f"tpot_{key}_ns"] == loadgen[f"result_time_per_output_token_{spelled}_percentile_ns"]
        )
    ttft, tokens = run.token_times()
    assert (tokens == 6).all() and (ttft > 0).all()


@pytest.mark.parametrize("engine", ["onnxruntime-genai", "openvino-genai", "llama-cpp-python"])
def test_seeded_sampling_is_the_same_in_every_run(
    registry: Any, engine: str, tmp_path: Path
) -> None:
    spec = {"max_new_tokens": 8, "sampling": "seeded", "temperature": 1.5, "seed": 7}
    first = _answers(_run(registry, ENGINES[engine], spec, mode="accuracy"), tmp_path)
    again = _answers(_run(registry, ENGINES[engine], spec, mode="accuracy"), tmp_path)
    greedy = _answers(
        _run(registry, ENGINES[engine], {"max_new_tokens": 8}, mode="accuracy"), tmp_path
    )
    assert (first == again).all()
    assert not (first == greedy).all()


def test_seeded_sampling_on_ctranslate2_is_refused_when_locked(registry: Any) -> None:
    """Its random generator is seeded once per thread: the same seed gave another answer after
    other answers had been drawn, so it cannot give seeded answers that are the same in any
    order."""
    spec = {"max_new_tokens": 4, "sampling": "seeded", "temperature": 1.0, "seed": 7}
    with pytest.raises(PinbenchError, match="seeded sampling on ctranslate2 is refused"):
        _run(registry, ENGINES["ctranslate2"], spec, mode="accuracy")


@pytest.mark.parametrize("engine", [*sorted(ENGINES), *QUANTISED])
def test_a_conversion_is_its_converters_bytes_again(
    llama_catalog: Path, engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``conversion.json`` names every byte the converter read (the transformers artifact's
    files) and wrote (the engine folder's); running the recorded converter again on the same
    folder writes the same bytes, given as paths relative to where it is called (``catalog
    export w e`` once made ONNX Runtime GenAI's builder look for a Hub repository ``w/...``)."""
    from importlib.metadata import version

    from pinbench.catalog.engines import CONVERTERS, convert, digests
    from pinbench.environments import LOCKS

    artifact = llama_catalog / f"tiny-llama-{engine}"
    record = json.loads((artifact / "conversion.json").read_text())
    converter = CONVERTERS[engine]
    if converter.source is not None:  # a script of the pinned source archive, run here
        from pinbench.environments.source_builds import SOURCE_BUILDS

        build = SOURCE_BUILDS[converter.package]
        assert record["source_archive"]["sha256"] == build.sha256
        assert record["version"] == build.version
        assert record["packages"] == {p: version(p) for p in converter.imports}
    elif converter.environment is None:  # pinbench's own interpreter's packages
        assert record["version"] == version(converter.package)
        wanted = {p: version(p) for p in (converter.package, *converter.imports)}
        assert record["packages"] == wanted
    else:  # the converter's pinned environment's
        lock = LOCKS / "converters" / f"{converter.environment}.txt"
        assert f"{converter.package}=={record['version']} " in lock.read_text()
    assert record["outputs"] == digests(artifact / CONVERTERS[engine].engine)
    source = llama_catalog / "tiny-llama"
    assert record["inputs"] == digests(source)
    monkeypatch.chdir(tmp_path)
    again = convert(converter, Path(os.path.relpath(source)), Path("again"))
    assert again == record
    assert (tmp_path / "again").is_dir()  # where it was called from, not the converter's folder


@pytest.mark.parametrize("artifact", ["", *sorted(ENGINES), *QUANTISED])
def test_every_generator_scores_a_text_from_its_second_token(
    llama_catalog: Path, artifact: str
) -> None:
    """A reference that starts the text (``start`` 0: an empty prompt) is scored from its
    second token, as from ``start`` 1, and the count says so: the first token has nothing
    before it (two engines counted it unscored, and transformers scored nothing). The float32
    ones' sums are transformers' teacher forcing, computed here."""
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM

    from pinbench.worker.generation.run import _generator
    from pinbench.worker.predictors.config import ModelFiles

    name = f"tiny-llama-{artifact}" if artifact else "tiny-llama"
    manifest = yaml.safe_load((llama_catalog / f"model-{name}.yaml").read_text())
    folder = llama_catalog / name
    files = {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}
    generator = _generator(manifest["framework"]["name"])
    generator.open(ModelFiles(files, manifest["format"], manifest.get("architecture")), 1)
    source = llama_catalog / "tiny-llama"
    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    ids = tokenizer.encode("The list type is a mutable sequence of items.").ids
    try:
        (loss, scored), (second, scored_second) = (
            generator.reference_loss(ids, start) for start in (0, 1)
        )
        assert generator.reference_loss(ids[:1], 0) == (0.0, 0)  # nothing to score
    finally:
        generator.close()
    assert scored == scored_second == len(ids) - 1 and loss == pytest.approx(second, rel=1e-6)
    model = AutoModelForCausalLM.from_pretrained(source, local_files_only=True).eval()  # type: ignore[no-untyped-call]
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids])).logits[0].double()
    picked = torch.log_softmax(logits, dim=-1)
    direct = -sum(float(picked[i - 1, ids[i]]) for i in range(1, len(ids)))
    assert loss == pytest.approx(direct, rel=1e-4 if artifact not in QUANTISED else 0.05)


def _republished(
    llama_catalog: Path, tmp_path: Path, engine: str, change: Callable[[Path], None], name: str
) -> Path:
    """The engine's artifact copied, ``change``d, and its manifest written for the copy
    (named ``name``): the manifest's path."""
    import yaml

    from tests.helpers import dump, sha

    folder = tmp_path / "changed"
    shutil.copytree(llama_catalog / f"tiny-llama-{engine}", folder)
    change(folder)
    data = yaml.safe_load((llama_catalog / f"model-tiny-llama-{engine}.yaml").read_text())
    data["name"] = name
    data["files"] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        body = path.read_bytes()
        data["files"].append(
            {"path": path.relative_to(folder).as_posix(), "sha256": sha(body), "size": len(body)}
        )
    return dump(folder / "model.yaml", data)


def _genai(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        path = folder / "onnxruntime-genai" / "genai_config.json"
        config = json.loads(path.read_text())
        change(config)
        path.write_text(json.dumps(config))

    return edit


def _genai_text(change: Callable[[str], str]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        path = folder / "onnxruntime-genai" / "genai_config.json"
        path.write_text(change(path.read_text()))

    return edit


def _smuggled(text: str) -> str:
    """A second ``model`` key before the real one, loading a library: a JSON reader keeps the
    last, ONNX Runtime GenAI's parser applies both."""
    evil = '"model": {"decoder": {"session_options": {"custom_ops_library": "libops.so"}}}, '
    return "{" + evil + text.lstrip()[1:]


def _session(config: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = config["model"]["decoder"]["session_options"]
    return options


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            _genai(lambda c: _session(c).update(custom_ops_library="/tmp/evil.so")),
            "model.decoder.session_options.custom_ops_library is not a key pinbench loads",
        ),
        (
            _genai(lambda c: _session(c).update(provider_options=[{"cuda": {}}])),
            "names execution providers",
        ),
        (
            _genai(lambda c: c["model"]["decoder"].update(filename="../model.onnx")),
            "must name a file beside it",
        ),
        (
            _genai(lambda c: c["model"].update(embedding={"filename": "model.onnx"})),
            "model.embedding is not a key pinbench loads",
        ),
        (_genai(lambda c: c.clear()), "model.decoder.filename must name a file"),
        (_genai_text(_smuggled), "key 'model' appears twice in one object"),
        (
            _genai(lambda c: c["model"]["decoder"]["outputs"].update(present_key_names="%s%s")),
            "present_key_names '%s%s': one %d among name characters only",
        ),
        (
            _genai(lambda c: c["search"].update(num_return_sequences=8)),
            "search.num_return_sequences: 1",
        ),
        (_genai_text(lambda t: t.replace('"top_p": 1.0', '"top_p": NaN')), "NaN is not a JSON"),
        (lambda f: (f / "onnxruntime-genai" / "model.onnx.data").unlink(), "keeps its data"),
        (lambda f: (f / "tokenizer.json").unlink(), "'tokenizer.json': a ort-genai model needs it"),
    ],
    ids=[
        "custom-ops",
        "provider",
        "outside",
        "other-model",
        "empty",
        "duplicate-key",
        "format-string",
        "many-answers",
        "nan",
        "external-data",
        "tokenizer",
    ],
)
def test_an_ort_genai_folder_beyond_one_cpu_decoder_is_refused_at_publish(
    registry: Any, llama_catalog: Path, tmp_path: Path, change: Callable[[Path], None], message: str
) -> None:
    manifest = _republished(llama_catalog, tmp_path, "onnxruntime-genai", change, "text/changed")
    with pytest.raises(PinbenchError, match=message):
        registry.publish(manifest)
    assert registry.list("model", "text/changed") == []


def _swap_tokens(folder: Path) -> None:
    """Two of tokenizer.json's tokens swapped (ids 3 and 4)."""
    path = folder / "tokenizer.json"
    data = json.loads(path.read_text())
    vocab = data["model"]["vocab"]
    three, four = (next(t for t, i in vocab.items() if i == n) for n in (3, 4))
    vocab[three], vocab[four] = 4, 3
    path.write_text(json.dumps(data))


def _swap_words(folder: Path) -> None:
    """Two of CTranslate2's vocabulary.json's tokens swapped."""
    path = folder / "ctranslate2" / "vocabulary.json"
    words = json.loads(path.read_text())
    words[3], words[4] = words[4], words[3]
    path.write_text(json.dumps(words))


@pytest.mark.parametrize(
    ("engine", "change", "file"),
    [
        ("ctranslate2", _swap_words, "ctranslate2/vocabulary.json"),
        ("ctranslate2", _swap_tokens, "ctranslate2/vocabulary.json"),
        ("llama-cpp-python", _swap_tokens, "llama-cpp-python/model.gguf"),
    ],
)
def test_an_engine_vocabulary_that_is_not_the_tokenizers_is_refused_at_publish(
    registry: Any,
    llama_catalog: Path,
    tmp_path: Path,
    engine: str,
    change: Callable[[Path], None],
    file: str,
) -> None:
    """CTranslate2 reads the prompt as its vocabulary's tokens, llama.cpp as ids into its
    GGUF file's vocabulary: another order would give the engine other tokens."""
    manifest = _republished(llama_catalog, tmp_path, engine, change, "text/swapped")
    with pytest.raises(PinbenchError) as refused:
        registry.publish(manifest)
    assert file in str(refused.value)
    assert "not tokenizer.json's vocabulary (id 3 differs; 512 tokens against 512)" in str(
        refused.value
    )
    assert registry.list("model", "text/swapped") == []


def test_an_engine_vocabulary_is_checked_again_when_the_model_opens(llama_catalog: Path) -> None:
    from pinbench.worker.generation.ct2_generator import CT2Generator
    from pinbench.worker.generation.engine_folder import check_vocabulary
    from pinbench.worker.predictors.base import ModelLoadError

    generator = CT2Generator()
    tokenizer = llama_catalog / "tiny-llama" / "tokenizer.json"
    generator.load_tokenizer(tokenizer, name="tokenizer.json", context=128, end={0})
    words = [generator.tokenizer.id_to_token(i) for i in range(512)]
    check_vocabulary(generator, words, "vocabulary.json")
    words[3], words[4] = words[4], words[3]
    with pytest.raises(ModelLoadError, match=r"not tokenizer.json's vocabulary \(id 3 differs"):
        check_vocabulary(generator, words, "vocabulary.json")


def test_generation_settings_ctranslate2_would_apply_its_own_way_are_refused(
    registry: Any, llama_catalog: Path, tmp_path: Path
) -> None:
    def penalise(folder: Path) -> None:
        path = folder / "generation_config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "repetition_penalty": 1.3}))

    registry.publish(_republished(llama_catalog, tmp_path, "ctranslate2", penalise, "text/penalty"))
    with pytest.raises(PinbenchError, match="it sets repetition_penalty, which CTranslate2"):
        _run(registry, "text/penalty@1", {"max_new_tokens": 2}, mode="accuracy")


def test_the_engines_study_runs_every_cell_and_shows_each_engines_token_figures(
    registry: Any,
) -> None:
    """``study run engines`` on a home with the catalog's llama part: every cell succeeds, and
    ``study show`` gives each cell the figure of its kind, from the run (ROUGE-L for accuracy,
    LoadGen's TTFT and TPOT, its tokens per second in Offline)."""
    ran = registry.studies().run("engines")
    assert ran["failed"] == ran["refused"] == 0 and ran["ran"] == 4 * (1 + len(ENGINES))
    shown = registry.studies().show("engines")
    cells = shown["cells"]
    assert {c["framework"] for c in cells} == {"transformers@*", *(f"{e}@*" for e in ENGINES)}
    assert {c["state"] for c in cells} == {"done"}
    for c in cells:
        if c["scenario"] == "accuracy":
            assert c["accuracy_metric"] == "rouge_l"
        elif c["scenario"] == "Offline":
            assert c["throughput_tps"] > 0 and "ttft_p50_ns" not in c
        else:
            assert c["ttft_p50_ns"] > 0 and c["tpot_p50_ns"] > 0
    from pinbench.shown import fmt_sig
    from pinbench.studies.figures import cell

    offline = next(c for c in cells if c["scenario"] == "Offline")
    assert cell(offline) == f"{fmt_sig(offline['throughput_tps'])} tokens/s"
    single = next(c for c in cells if c["scenario"] == "SingleStream")
    assert str(cell(single)).startswith("TTFT ") and ", TPOT " in str(cell(single))


def test_a_first_token_told_from_another_thread_than_the_querys_is_refused() -> None:
    """LoadGen matches a query's first token and its completion only from one thread (told
    from two, its TTFT read 1.8e17 ns, and an accuracy test crashed): an engine that streams
    on its own thread hands the first token back to the query's (OpenVINO GenAI's does)."""
    import threading

    from pinbench.worker.generation.scenario import _Query

    query = _Query(7)
    refused: list[BaseException] = []

    def elsewhere() -> None:
        try:
            query.first()
        except RuntimeError as exc:
            refused.append(exc)

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert len(refused) == 1 and "another thread" in str(refused[0])
    assert not query.told and query.at == 0


@pytest.mark.parametrize("quantised", QUANTISED)
def test_a_quantised_engine_states_its_difference_as_the_field_does(
    registry: Any, tmp_path: Path, quantised: str
) -> None:
    """CTranslate2's int8 conversion and llama.cpp's q8_0 GGUF do not answer every prompt
    with transformers' float32 tokens; ``runs parity`` says how far: the share of prompts
    whose answers still agree, and each run's perplexity of the references, each the runs'
    own."""
    spec = {"max_new_tokens": NEW, "stop_at_end": False}
    reference = _run(registry, TRANSFORMERS, spec, mode="accuracy")
    int8 = _run(registry, f"text/tiny-llama-{quantised}@1", spec, mode="accuracy")
    ours, theirs = _answers(reference, tmp_path), _answers(int8, tmp_path)
    (parity,) = [p for p in registry.parity(reference.id, [int8.id]) if p.run == int8.id]
    figures = {f.name: f.value for f in parity.agreement.figures}
    differing = int((ours != theirs).any(axis=1).sum())
    assert figures["answers_differing"] == differing
    assert figures["answers_agreeing"] == pytest.approx(1 - differing / len(ours))
    assert figures["perplexity"] == int8.metrics["perplexity"]
    assert figures["reference_perplexity"] == reference.metrics["perplexity"]
    assert figures["perplexity"] != figures["reference_perplexity"]  # 8-bit, not float32
    assert figures["perplexity"] == pytest.approx(figures["reference_perplexity"], rel=0.05)
    change = figures["perplexity"] / figures["reference_perplexity"] - 1
    assert figures["perplexity_change"] == pytest.approx(change)


@pytest.mark.parametrize(
    ("framework", "title"), [("vllm", "vLLM"), ("tensorrt-llm", "TensorRT-LLM")]
)
def test_a_gpu_engine_is_known_by_name_and_refused_with_the_reason(
    framework: str, title: str
) -> None:
    from pinbench.worker.predictors import FrameworkUnavailable, nvidia_devices, predictor_class

    with pytest.raises(FrameworkUnavailable) as refused:
        predictor_class(framework)
    reason = refused.value.reason
    assert reason.startswith(title)
    assert ("this machine has none" in reason) == (not nvidia_devices())


def test_an_openvino_ir_that_sets_its_own_runtime_options_is_refused_at_publish(
    registry: Any, llama_catalog: Path, tmp_path: Path
) -> None:
    def options(folder: Path) -> None:
        path = folder / "openvino-genai" / "openvino_model.xml"
        text = path.read_text()
        extra = '<KEY_CACHE_GROUP_SIZE value="16" />'
        path.write_text(text.replace("<runtime_options>", "<runtime_options>" + extra, 1))

    manifest = _republished(llama_catalog, tmp_path, "openvino-genai", options, "text/optioned")
    with pytest.raises(PinbenchError, match="carries rt_info runtime_options KEY_CACHE_GROUP_SIZE"):
        registry.publish(manifest)
    assert registry.list("model", "text/optioned") == []


def test_a_gguf_split_over_files_is_refused_at_publish(
    registry: Any, llama_catalog: Path, tmp_path: Path
) -> None:
    """llama.cpp opens a split model's other parts by their names beside it."""
    import struct

    from tests.test_gguf import ARCH, TOKENS, gguf_bytes

    def split(folder: Path) -> None:
        part = [ARCH, TOKENS, ("split.count", 2, struct.pack("<H", 2))]
        (folder / "llama-cpp-python" / "model.gguf").write_bytes(gguf_bytes(part))

    manifest = _republished(llama_catalog, tmp_path, "llama-cpp-python", split, "text/split")
    with pytest.raises(PinbenchError, match="one part of a split model"):
        registry.publish(manifest)
    assert registry.list("model", "text/split") == []


def test_llama_cpp_in_a_hash_pinned_venv_answers_as_in_pinbenchs_own(
    registry: Any, tmp_path: Path
) -> None:
    """The venv runner builds llama-cpp-python's environment from its lock, which pins the
    source archive: the wheel built from it once is installed, and the answers are the
    local runner's."""
    spec = {"max_new_tokens": 6}
    request = {"model": ENGINES["llama-cpp-python"], "dataset": DATASET, "generation": spec}
    isolated = registry.lock({**request, "scenario": {"mode": "accuracy"}})[0].run(runner="venv")
    assert isolated.status == "succeeded", isolated.info.get("error")
    local = _run(registry, ENGINES["llama-cpp-python"], spec, mode="accuracy")
    assert (_answers(isolated, tmp_path) == _answers(local, tmp_path)).all()


def test_a_gguf_with_a_shorter_context_than_its_config_claims_is_refused(
    registry: Any, llama_catalog: Path, tmp_path: Path
) -> None:
    """Prompts are bounded by the context the engine is made with: the GGUF file's."""

    def longer(folder: Path) -> None:
        path = folder / "config.json"
        path.write_text(
            json.dumps({**json.loads(path.read_text()), "max_position_embeddings": 4096})
        )

    registry.publish(_republished(llama_catalog, tmp_path, "llama-cpp-python", longer, "text/long"))
    with pytest.raises(PinbenchError, match="its context 4096 is longer than the GGUF file's 128"):
        _run(registry, "text/long@1", {"max_new_tokens": 2}, mode="accuracy")

"""Hugging Face folders (``format: hf-folder``, framework transformers): a tiny random-weight
BERT and ViT built here from a config, written as the field publishes them, described by
``pinbench manifest model DIR``, published, locked and run, with the same outputs as
transformers called directly on the same inputs; a folder that would run its publisher's code
(custom code, pickles) is refused before anything loads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import pinbench
from pinbench.artifacts.hf_folder import HfFolderRefused, describe
from pinbench.catalog.minilm import TOKENIZER
from tests.encdec_folders import T5_SENTENCES as ENCDEC_SENTENCES
from tests.helpers import Cli, dump

SENTENCES = [
    "the cat sat on the mat",
    "a quick brown fox jumps over the lazy dog",
    "numbers are not words",
    "pinbench pins every byte",
    "short",
    "the model reads these sentences once",
]
LENGTH = 16


def _bert_folder(folder: Path, architecture: str = "BertForSequenceClassification") -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel

    torch.manual_seed(0)
    config = BertConfig(  # type: ignore[call-arg]
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
        num_labels=3,
    )
    cls = BertForSequenceClassification if architecture.endswith("Classification") else BertModel
    cls(config).eval().save_pretrained(folder)  # type: ignore[no-untyped-call]
    shutil.copyfile(TOKENIZER, folder / "tokenizer.json")
    names = ["input_ids", "token_type_ids", "attention_mask"]
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_input_names": names}))
    return folder


def _dataset(root: Path) -> Path:
    (root / "texts").mkdir()
    (root / "texts" / "sentences.txt").write_text("".join(s + "\n" for s in SENTENCES))
    (root / "texts" / "labels.txt").write_text("".join(f"{i % 3}\n" for i in range(6)))
    from tests.helpers import sha

    def entry(name: str) -> dict[str, Any]:
        data = (root / "texts" / name).read_bytes()
        return {"path": name, "sha256": sha(data), "size": len(data)}

    return dump(
        root / "texts" / "dataset.yaml",
        {
            "kind": "dataset",
            "name": "hf-texts",
            "version": "1.0.0",
            "task": "classification",
            "samples": len(SENTENCES),
            "data": {"format": "text-lines", "path": "sentences.txt"},
            "labels": {"format": "class-index-txt", "path": "labels.txt", "classes": 3},
            "files": [entry("sentences.txt"), entry("labels.txt")],
        },
    )


def _direct(folder: Path, output: str) -> np.ndarray[Any, Any]:
    """transformers called directly on the same token ids."""
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModel, AutoModelForSequenceClassification

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_padding(length=LENGTH)
    encoded = tokenizer.encode_batch(SENTENCES)
    kwargs = {
        "input_ids": torch.tensor([e.ids for e in encoded]),
        "token_type_ids": torch.tensor([e.type_ids for e in encoded]),
        "attention_mask": torch.tensor([e.attention_mask for e in encoded]),
    }
    auto = AutoModelForSequenceClassification if output == "logits" else AutoModel
    model = auto.from_pretrained(folder, local_files_only=True).eval()
    with torch.inference_mode():
        result: np.ndarray[Any, Any] = model(**kwargs)[output].numpy()
    return result


def _manifest(cli: Cli, folder: Path, name: str) -> dict[str, Any]:
    out = folder.parent / f"{name}.yaml"
    done = cli("manifest", "model", str(folder), "--name", f"text/{name}", "-o", str(out))
    assert done.code == 0, done.err
    data: dict[str, Any] = yaml.safe_load(out.read_text())
    for spec in data["inputs"]:  # the sentences are short: pad to LENGTH
        spec["shape"] = [LENGTH]
        spec["steps"][0]["tokenize"]["max_length"] = LENGTH
    dump(out, data)
    return data


def test_a_bert_classifier_folder_runs_with_transformers_own_outputs(
    cli: Cli, tmp_path: Path
) -> None:
    folder = _bert_folder(tmp_path / "bert-cls")
    data = _manifest(cli, folder, "bert-cls")
    assert data["format"] == "hf-folder"
    assert data["architecture"] == "BertForSequenceClassification"
    assert data["framework"]["name"] == "transformers"
    assert {f["path"] for f in data["files"]} == {
        "bert-cls/config.json",
        "bert-cls/model.safetensors",
        "bert-cls/tokenizer.json",
        "bert-cls/tokenizer_config.json",
    }
    assert data["outputs"] == [{"name": "logits", "type": "classification"}]
    assert cli("init").code == 0
    registry = pinbench.Registry(tmp_path / "home")
    from pinbench.catalog import frameworks

    registry.publish(frameworks.write(tmp_path, "transformers"))
    registry.publish(tmp_path / "bert-cls.yaml")
    registry.publish(_dataset(tmp_path))
    lock = registry.lock(
        {"model": "text/bert-cls@1", "dataset": "hf-texts@1", "scenario": {"mode": "accuracy"}}
    )[0]
    run = lock.run(runner="local")
    assert run.status == "succeeded"
    run.export_outputs(tmp_path / "outputs.npy")
    recorded = np.load(tmp_path / "outputs.npy", allow_pickle=False)
    expected = _direct(folder, "logits")
    assert recorded.shape == expected.shape
    np.testing.assert_allclose(recorded, expected, rtol=1e-5, atol=1e-6)
    top1 = float(np.mean(expected.argmax(axis=1) == np.arange(6) % 3))
    assert run.metrics["top1"] == pytest.approx(top1)


def _onnx_export(folder: Path, hf: dict[str, Any], root: Path) -> Path:
    """The folder's weights exported to ONNX (TorchScript exporter), with a manifest of the
    same inputs and steps as the folder's own."""
    import warnings

    import torch
    from transformers import AutoModelForSequenceClassification

    from pinbench.catalog.files import SUPPORTED
    from tests.helpers import sha

    model = AutoModelForSequenceClassification.from_pretrained(
        folder, local_files_only=True, attn_implementation="eager"
    ).eval()
    names = ["input_ids", "attention_mask", "token_type_ids"]  # forward's order
    assert sorted(names) == sorted(i["name"] for i in hf["inputs"])
    mask = torch.ones((2, LENGTH), dtype=torch.long)
    mask[1, LENGTH // 2 :] = 0  # a padded row: the traced graph keeps the mask
    example = {
        "input_ids": torch.randint(0, 1000, (2, LENGTH)),
        "attention_mask": mask,
        "token_type_ids": torch.zeros((2, LENGTH), dtype=torch.long),
    }
    out = root / "bert-onnx"
    out.mkdir()
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (),
            str(out / "model.onnx"),
            kwargs=example,
            input_names=names,
            output_names=["logits"],
            dynamic_axes={n: {0: "batch"} for n in [*names, "logits"]},
            opset_version=17,
            dynamo=False,
        )
    shutil.copyfile(folder / "tokenizer.json", out / "tokenizer.json")
    files = []
    for name in ("model.onnx", "tokenizer.json"):
        data = (out / name).read_bytes()
        files.append({"path": f"bert-onnx/{name}", "sha256": sha(data), "size": len(data)})
    text = json.dumps(hf["inputs"]).replace("bert-cls/tokenizer.json", "bert-onnx/tokenizer.json")
    text = text.replace('"longest"', '"fixed"')  # the export's sequence axis is LENGTH
    return dump(
        root / "bert-onnx.yaml",
        {
            "kind": "model",
            "name": "text/bert-onnx",
            "version": "1.0.0",
            "format": "onnx",
            "framework": {"name": "onnxruntime", "range": SUPPORTED["onnxruntime"]},
            "files": files,
            "inputs": json.loads(text),
            "outputs": hf["outputs"],
        },
    )


def test_the_folder_and_its_onnx_export_agree_in_runs_parity(cli: Cli, tmp_path: Path) -> None:
    """The same weights as a Hugging Face folder (transformers) and exported to ONNX (ONNX
    Runtime), run on the same dataset: ``runs parity`` finds them agreeing, and the logits are
    within the float tolerance of each other computed here."""
    from pinbench.catalog import frameworks

    folder = _bert_folder(tmp_path / "bert-cls")
    hf = _manifest(cli, folder, "bert-cls")
    exported = _onnx_export(folder, hf, tmp_path)
    assert cli("init").code == 0
    registry = pinbench.Registry(tmp_path / "home")
    for name in ("transformers", "onnxruntime"):
        registry.publish(frameworks.write(tmp_path, name))
    registry.publish(tmp_path / "bert-cls.yaml")
    registry.publish(exported)
    registry.publish(_dataset(tmp_path))
    runs = []
    for model in ("text/bert-cls@1", "text/bert-onnx@1"):
        request = {"model": model, "dataset": "hf-texts@1", "scenario": {"mode": "accuracy"}}
        run = registry.lock(request)[0].run(runner="local")
        assert run.status == "succeeded", run.info.get("error")
        run.export_outputs(tmp_path / f"{run.id}.npy")
        runs.append(run)
    ours, theirs = (np.load(tmp_path / f"{r.id}.npy", allow_pickle=False) for r in runs)
    np.testing.assert_allclose(theirs, ours, rtol=1e-4, atol=1e-5)
    assert runs[0].metrics["top1"] == runs[1].metrics["top1"]
    found = registry.parity(runs[0].id, [runs[1].id])
    parity = next(p for p in found if p.run == runs[1].id)
    assert parity.agreement.agrees


def test_manifest_model_on_a_bare_encoder_writes_a_pooled_embedding(
    cli: Cli, tmp_path: Path
) -> None:
    folder = _bert_folder(tmp_path / "bert", "BertModel")
    data = _manifest(cli, folder, "bert")
    assert data["outputs"][0]["name"] == "last_hidden_state"
    assert data["outputs"][0]["type"] == "embedding"
    assert data["outputs"][0]["steps"][0] == {"pool": {"mode": "mean", "mask": "attention_mask"}}


CLASSES = ("ant", "bee", "cat", "dog")


def _vit_folder(folder: Path) -> Path:
    """A random-weight ViT classifier with its image processor, as the field saves them."""
    import torch
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    torch.manual_seed(2)
    config = ViTConfig(  # type: ignore[call-arg]
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        num_labels=len(CLASSES),
    )
    ViTForImageClassification(config).eval().save_pretrained(folder)  # type: ignore[no-untyped-call]
    ViTImageProcessor(
        size={"height": 32, "width": 32},
        resample=3,
        image_mean=[0.5, 0.4, 0.3],
        image_std=[0.2, 0.25, 0.3],
    ).save_pretrained(folder)
    return folder


def test_a_vit_folder_runs_with_transformers_own_outputs(tmp_path: Path) -> None:
    """An image model: the predictor binds ``pixel_values`` by name and returns its logits."""
    import torch
    from transformers import ViTForImageClassification

    from pinbench.registry.ports import Input, Output
    from pinbench.worker.named import NamedInputs
    from pinbench.worker.predictors.config import ModelFiles, PredictorOptions
    from pinbench.worker.predictors.transformers import TransformersPredictor

    folder = _vit_folder(tmp_path / "vit")
    model = ViTForImageClassification.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    pixels = np.random.default_rng(0).standard_normal((3, 3, 32, 32)).astype(np.float32)
    with torch.inference_mode():
        expected = model(pixel_values=torch.from_numpy(pixels)).logits.numpy()
    files = {p.name: p for p in folder.iterdir()}
    predictor = TransformersPredictor()
    predictor.open(
        ModelFiles(
            files,
            "hf-folder",
            "ViTForImageClassification",
            inputs=(Input(name="pixel_values", shape=[3, 32, 32]),),
            outputs=(Output(name="logits", type="classification"),),
        ),
        PredictorOptions(),
    )
    got = predictor.predict(NamedInputs({"pixel_values": pixels}))
    np.testing.assert_allclose(
        np.asarray(got["logits"], np.float32), expected, rtol=1e-5, atol=1e-6
    )
    predictor.close()


def _photos(root: Path) -> list[Path]:
    """Images of several sizes and modes in an imagefolder layout, in sample (path) order."""
    from PIL import Image

    rng = np.random.default_rng(5)
    paths = []
    for i, label in enumerate(CLASSES * 2):
        (root / label).mkdir(parents=True, exist_ok=True)
        size = (int(rng.integers(20, 70)), int(rng.integers(20, 70)))
        pixels = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
        image = Image.fromarray(pixels).convert("L" if i == 3 else "RGB")
        path = root / label / f"{i}.png"
        image.save(path)
        paths.append(path)
    (root.parent / "classes.txt").write_text("".join(c + "\n" for c in CLASSES))
    return sorted(paths, key=lambda p: p.relative_to(root).as_posix())


def _resized(path: Path) -> np.ndarray[Any, Any]:
    from PIL import Image

    rgb = np.asarray(Image.open(path).convert("RGB"))
    channels = [
        np.asarray(
            Image.fromarray(rgb[..., c].astype(np.float32), mode="F").resize(
                (32, 32), Image.Resampling.BICUBIC
            )
        )
        for c in range(3)
    ]
    resized: np.ndarray[Any, Any] = np.clip(np.rint(np.stack(channels, axis=-1)), 0, 255)
    return resized


def test_a_vit_folder_takes_its_inputs_steps_from_its_image_processor(
    cli: Cli, tmp_path: Path
) -> None:
    """``manifest model DIR`` on an image classifier writes ``pixel_values``' steps from the
    folder's ``preprocessor_config.json``; run on image files, the logits are transformers' own
    (the processor's Pillow path, then the model) on the same files."""
    import torch
    from PIL import Image
    from transformers import ViTForImageClassification, ViTImageProcessor

    folder = _vit_folder(tmp_path / "vit")
    out = tmp_path / "vit.yaml"
    done = cli("manifest", "model", str(folder), "--name", "vision/vit", "-o", str(out))
    assert done.code == 0, done.err
    data = yaml.safe_load(out.read_text())
    assert data["inputs"] == [
        {
            "name": "pixel_values",
            "type": "image",
            "element_type": "float32",
            "shape": [3, 32, 32],
            "steps": [
                {"decode": {"color_mode": "rgb"}},
                {"resize": {"size": [32, 32], "method": "bicubic"}},
                {
                    "normalize": {
                        "mean": pytest.approx([0.5 * 255, 0.4 * 255, 0.3 * 255]),
                        "std": pytest.approx([0.2 * 255, 0.25 * 255, 0.3 * 255]),
                    }
                },
                {"layout": {"to": "NCHW"}},
            ],
        }
    ]
    paths = _photos(tmp_path / "photos")
    dataset = tmp_path / "dataset.yaml"
    made = cli(
        "manifest", "dataset", str(tmp_path / "photos"), "--names", str(tmp_path / "classes.txt"),
        "--name", "photos", "-o", str(dataset),
    )  # fmt: skip
    assert made.code == 0, made.err
    assert cli("init").code == 0
    registry = pinbench.Registry(tmp_path / "home")
    from pinbench.catalog import frameworks

    registry.publish(frameworks.write(tmp_path, "transformers"))
    registry.publish(out)
    registry.publish(dataset)
    request = {"model": "vision/vit@1", "dataset": "photos@1", "scenario": {"mode": "accuracy"}}
    run = registry.lock(request)[0].run(runner="local")
    assert run.status == "succeeded", run.info.get("error")
    run.export_outputs(tmp_path / "outputs.npy")
    recorded = np.load(tmp_path / "outputs.npy", allow_pickle=False)
    # the steps as docs/steps.md states them: Pillow's float resize per channel, rounded to 8
    # bits; then (x / 255 - mean) / std, channels first
    mean, std = np.array([0.5, 0.4, 0.3]), np.array([0.2, 0.25, 0.3])
    ours = np.stack([_resized(p) for p in paths]).astype(np.float64)
    pixels = ((ours / 255 - mean) / std).transpose(0, 3, 1, 2).astype(np.float32)
    model = ViTForImageClassification.from_pretrained(folder).eval()  # type: ignore[no-untyped-call]
    with torch.inference_mode():
        expected = model(pixel_values=torch.from_numpy(pixels)).logits.numpy()
    np.testing.assert_allclose(recorded, expected, rtol=1e-5, atol=1e-6)
    # transformers' own processor (its Pillow path here: no torchvision) resizes in 8 bits, two
    # passes clipped between them: on these noise images a pixel can differ by several levels
    # (stated in the docs), but every key it read is the one the steps follow (a wrong filter,
    # mean, std or channel order moves the average by far more than a level)
    processor = ViTImageProcessor.from_pretrained(folder)
    images = [Image.open(p).convert("RGB") for p in paths]
    theirs = processor(images=images, return_tensors="np")["pixel_values"]
    levels = np.abs(theirs - pixels) * (std * 255)[None, :, None, None]
    assert levels.mean() < 1.0
    truth = np.array([CLASSES.index(p.parent.name) for p in paths])
    assert run.metrics["top1"] == pytest.approx(float(np.mean(expected.argmax(1) == truth)))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"size": {"shortest_edge": 32}}, "a shortest_edge or longest_edge size is not written"),
        ({"resample": 5}, "resample 5: one of"),
        ({"do_pad": True}, "key 'do_pad' (True) is not one pinbench reads"),
        ({"image_processor_type": "ConvNextImageProcessor"}, "write this model's image steps"),
        ({"image_std": [0.5, 0.0, 0.5]}, "image_std holds a 0"),
        ({"do_resize": "yes"}, "do_resize 'yes': true or false"),
    ],
)
def test_an_image_processor_pinbench_cannot_follow_exactly_is_refused(
    cli: Cli, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    folder = _vit_folder(tmp_path / "vit")
    config_path = folder / "preprocessor_config.json"
    config = json.loads(config_path.read_text()) | change
    config_path.write_text(json.dumps(config))
    out = tmp_path / "vit.yaml"
    done = cli("manifest", "model", str(folder), "--name", "vision/vit", "-o", str(out))
    assert done.code != 0
    assert message in done.err and "preprocessor_config.json" in done.err
    assert not out.exists()


def _files(folder: Path) -> dict[str, Path]:
    return {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}


def test_a_folder_with_custom_code_is_refused(tmp_path: Path) -> None:
    folder = _bert_folder(tmp_path / "remote")
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModel": "modeling_evil.EvilModel"}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(HfFolderRefused, match="trust_remote_code"):
        describe(_files(folder))
    del config["auto_map"]
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "modeling_evil.py").write_text("import os\n")
    with pytest.raises(HfFolderRefused, match="custom code"):
        describe(_files(folder))


def test_pickled_weights_need_trusted_and_are_ambiguous_beside_safetensors(
    cli: Cli, tmp_path: Path
) -> None:
    folder = _bert_folder(tmp_path / "pickled")
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04K\x01.")  # a pickle of 1
    with pytest.raises(HfFolderRefused, match="ambiguous"):
        describe(_files(folder))
    (folder / "model.safetensors").unlink()
    assert describe(_files(folder)).pickled
    # `manifest model` never vouches for a pickle by itself: it writes `trusted: false`, says
    # beside it what true would mean, and the author decides (issue 48, item 10)
    out = tmp_path / "pickled.yaml"
    done = cli("manifest", "model", str(folder), "--name", "text/pickled", "-o", str(out))
    assert done.code == 0, done.err
    written = out.read_text()
    assert "trusted: false  # pickled weights run code when loaded" in written, written
    assert yaml.safe_load(written)["trusted"] is False
    assert "`trusted: false` written" in done.err and "vouch" in done.err
    # publishing it so (or with `trusted` left out) is refused, naming the file and the way out
    assert cli("init").code == 0
    for trusted in (False, None):
        data = yaml.safe_load(written)
        if trusted is None:
            data.pop("trusted")
        dump(out, data)
        done = cli("publish", str(out))
        assert done.code == 1
        assert "pickled/pytorch_model.bin" in done.err and "trusted: true" in done.err
        assert "Traceback" not in done.err
    data["trusted"] = True  # the author's own decision
    dump(out, data)
    done = cli("publish", str(out))
    assert done.code == 0, done.err


def test_an_architecture_the_manifest_misnames_is_refused_at_publish(
    cli: Cli, tmp_path: Path
) -> None:
    folder = _bert_folder(tmp_path / "misnamed")
    data = _manifest(cli, folder, "misnamed")
    data["architecture"] = "GPT2LMHeadModel"
    dump(tmp_path / "misnamed.yaml", data)
    assert cli("init").code == 0
    done = cli("publish", str(tmp_path / "misnamed.yaml"))
    assert done.code == 1
    assert "BertForSequenceClassification" in done.err and "GPT2LMHeadModel" in done.err


def test_tensorflow_weights_alone_are_refused_with_the_way_out(tmp_path: Path) -> None:
    folder = _bert_folder(tmp_path / "tf")
    (folder / "model.safetensors").rename(folder / "tf_model.h5")
    with pytest.raises(HfFolderRefused, match="TensorFlow or Flax weights"):
        describe(_files(folder))


def test_a_whole_hub_repository_is_described_pinned_to_its_commit_and_published(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``manifest model hf://ORG/NAME@REV``: the repository's snapshot at the commit the
    branch names now, every file sourced from that commit; publish fetches and checks them
    (an offline Hugging Face cache, HF_HUB_OFFLINE=1, as tests/test_sources.py uses)."""
    from tests.sourcebuilders import hf_commit

    cache = tmp_path / "hf-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = _bert_folder(tmp_path / "local")
    commit = hf_commit(
        cache, "acme/bert-cls", {p.name: p.read_bytes() for p in folder.iterdir()}, refs=["main"]
    )
    out = tmp_path / "manifests" / "model.yaml"
    out.parent.mkdir()
    done = cli("manifest", "model", "hf://acme/bert-cls@main", "-o", str(out))
    assert done.code == 0, done.err
    data = yaml.safe_load(out.read_text())
    assert data["name"] == "bert-cls" and data["architecture"] == "BertForSequenceClassification"
    assert {f["path"]: f["source"] for f in data["files"]} == {
        name: f"hf://acme/bert-cls@{commit}/{name}"
        for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
    }
    local = {p.name: p.read_bytes() for p in folder.iterdir()}
    from tests.helpers import sha

    assert all(f["sha256"] == sha(local[f["path"]]) for f in data["files"])
    assert cli("init").code == 0
    published = cli("publish", str(out))
    assert published.code == 0, published.err
    nope = ("manifest", "model", "hf://acme/bert-cls@nope", "-o", str(out), "--force")
    assert cli(*nope).code != 0  # the revision, not the file written before


def _t5_folder(folder: Path, architecture: str, pad: Any = "<pad>") -> Path:
    from tests.encdec_folders import t5_folder

    return t5_folder(folder, architecture, pad)


def test_an_encoder_decoder_is_refused_at_manifest_and_publish_naming_its_architecture(
    cli: Cli, tmp_path: Path
) -> None:
    """A T5 folder was read as a sentence-embedding model and, declared `type: generation`,
    published, locked and run into a traceback; the bare encoder-decoder (no generating head:
    its decoder needs ids of its own) is refused before any of that (decision 245 reads
    ``T5ForConditionalGeneration``: tests/test_generation_encdec.py)."""
    folder = _t5_folder(tmp_path / "t5", "T5Model")
    out = tmp_path / "t5.yaml"
    done = cli("manifest", "model", str(folder), "--name", "text/t5", "-o", str(out))
    assert done.code == 1 and not out.exists()
    assert "T5Model is an encoder-decoder" in done.err
    assert "is_encoder_decoder: true" in done.err
    from tests.helpers import sha

    files = [
        {"path": f"t5/{p.name}", "sha256": sha(p.read_bytes()), "size": p.stat().st_size}
        for p in sorted(folder.iterdir())
    ]
    manifest = {
        "kind": "model",
        "name": "text/t5",
        "version": "1.0.0",
        "format": "hf-folder",
        "architecture": "T5Model",
        "framework": {"name": "transformers", "range": ">=5 <6"},
        "files": files,
        "outputs": [{"name": "logits", "type": "generation"}],
    }
    dump(out, manifest)
    assert cli("init").code == 0
    done = cli("publish", str(out))
    assert done.code == 1
    assert "T5Model is an encoder-decoder" in done.err
    assert "Traceback" not in done.err


def test_an_encoder_decoder_whose_config_does_not_say_so_is_refused_before_generating(
    tmp_path: Path,
) -> None:
    """Without `is_encoder_decoder` in config.json the folder reads as any other; the
    generator's loader still refuses the class, whose forward takes the decoder's ids."""
    from pinbench.worker.generation.torch_generator import TorchGenerator
    from pinbench.worker.predictors.base import ModelLoadError
    from pinbench.worker.predictors.config import ModelFiles

    folder = _t5_folder(tmp_path / "t5", "T5ForConditionalGeneration")
    config = json.loads((folder / "config.json").read_text())
    del config["is_encoder_decoder"]
    (folder / "config.json").write_text(json.dumps(config))
    assert describe(_files(folder)).architecture == "T5ForConditionalGeneration"
    generator = TorchGenerator()
    files = ModelFiles(_files(folder), "hf-folder", "T5ForConditionalGeneration")
    with pytest.raises(ModelLoadError, match=r"is an encoder-decoder .* decoder_input_ids"):
        generator.open(files, None)


@pytest.mark.parametrize(
    "pad",
    [
        pytest.param("<pad>", id="a string"),
        pytest.param({"__type": "AddedToken", "content": "<pad>", "special": True}, id="added"),
    ],
)
def test_the_encoder_alone_is_an_encoder_padded_with_the_tokenizer_configs_pad_token(
    cli: Cli, tmp_path: Path, pad: Any
) -> None:
    """T5's encoder alone is an encoder: `manifest model` writes its pooled embedding. Its
    tokenizer.json names no pad token, tokenizer_config.json does: the inputs are padded with
    it, as transformers' own tokenizer pads them (they were refused: "names no pad token")."""
    from transformers import PreTrainedTokenizerFast

    from pinbench.registry.manifest import ModelManifest, load_manifest
    from pinbench.worker.text_inputs import preprocess_texts

    folder = _t5_folder(tmp_path / "t5enc", "T5EncoderModel", pad)
    data = _manifest(cli, folder, "t5enc")
    assert data["architecture"] == "T5EncoderModel"
    assert data["outputs"][0]["type"] == "embedding"
    manifest = load_manifest(tmp_path / "t5enc.yaml")
    assert isinstance(manifest, ModelManifest)
    files = {f"t5enc/{n}": p for n, p in _files(folder).items()}
    reference = PreTrainedTokenizerFast.from_pretrained(folder)(
        ENCDEC_SENTENCES, padding="max_length", max_length=LENGTH
    )
    for spec in manifest.inputs:
        got = preprocess_texts(ENCDEC_SENTENCES, spec, files)
        np.testing.assert_array_equal(got, np.asarray(reference[spec.name]))
    assert (np.asarray(reference["input_ids"]) == 0).any()  # "<pad>" is id 0: padding happened


@pytest.mark.parametrize(
    ("architecture", "flag", "refused"),
    [
        ("T5ForConditionalGeneration", True, False),  # generates from its decoder's start
        ("BartForConditionalGeneration", True, False),
        ("MarianMTModel", True, False),
        ("T5Model", True, True),  # the bare encoder-decoder: its decoder needs ids of its own
        ("BartModel", True, True),
        ("T5EncoderModel", True, False),  # the encoder alone (transformers 4 saved it `true`)
        ("BartForSequenceClassification", True, False),  # builds its decoder's ids itself
        ("T5ForConditionalGeneration", False, False),  # the class decides at load (above)
        ("GPT2LMHeadModel", None, False),
    ],
)
def test_which_encoder_decoder_folders_are_read(
    tmp_path: Path, architecture: str, flag: bool | None, refused: bool
) -> None:
    """The rule on config.json alone (reading is not running): `is_encoder_decoder: true`
    is refused unless the architecture runs from the tokenizer's inputs alone."""
    folder = _bert_folder(tmp_path / "folder", "BertModel")
    config = json.loads((folder / "config.json").read_text())
    config["architectures"] = [architecture]
    config["decoder_start_token_id"] = 0
    if flag is not None:
        config["is_encoder_decoder"] = flag
    (folder / "config.json").write_text(json.dumps(config))
    if refused:
        with pytest.raises(HfFolderRefused, match=f"{architecture} is an encoder-decoder"):
            describe(_files(folder))
    else:
        assert describe(_files(folder)).architecture == architecture

"""A Hugging Face ``config.json`` must describe the weights beside it (issue 48, item 11):
``n_layer: 1000000`` over a two-layer GPT-2 published, locked, and then loaded for minutes
past 1.3 GB. Now every number that sizes the model is bounded and compared with the tensors
the safetensors headers name (``artifacts.hf_shapes``), at ``manifest model``, at publish and
before a run loads, and a sample of the architectures transformers ships still passes as saved.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pinbench.artifacts.hf_folder import HfFolderRefused, describe
from pinbench.artifacts.hf_shapes import ShapeMismatch, Weights, check_config
from tests.helpers import Cli, dump, sha


def _saved(folder: Path, config: Any, architecture: str) -> Path:
    """A random-weight model saved as the field saves it."""
    import torch
    import transformers

    torch.manual_seed(0)
    getattr(transformers, architecture)(config).eval().save_pretrained(folder)
    return folder


def _gpt2(folder: Path) -> Path:
    from transformers import GPT2Config

    config = GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=64, n_positions=32)
    _saved(folder, config, "GPT2LMHeadModel")
    (folder / "tokenizer.json").write_text("{}")  # a text model: its vocabulary is checked
    return folder


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _gpt2(tmp_path_factory.mktemp("gpt2") / "gpt2")


def _files(folder: Path) -> dict[str, Path]:
    return {p.name: p for p in folder.iterdir()}


def _edited(folder: Path, where: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    shutil.copytree(folder, where)
    config = json.loads((where / "config.json").read_text())
    change(config)
    (where / "config.json").write_text(json.dumps(config))
    return where


def _set(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda config: config.update(values)


# (why, change to the two-layer GPT-2's config.json, what the refusal says)
REFUSED = [
    ("the issue's config", _set(n_layer=1_000_000), "`n_layer: 1000000`"),
    ("one layer more than the weights hold", _set(n_layer=3), "no numbered stack of the weights"),
    ("one layer fewer: the rest would be dropped", _set(n_layer=1), "transformer.h (2)"),
    ("a width no tensor has", _set(n_embd=24), "`n_embd: 24`, but no tensor"),
    ("a width past its bound", _set(n_embd=10**7), "`n_embd: 10000000` must be an integer"),
    ("a feed-forward far wider than the model", _set(n_inner=16 * 16 + 1), "more than 16 times"),
    ("a vocabulary larger than the embedding", _set(vocab_size=100_000), "`vocab_size: 100000`"),
    ("a vocabulary past its bound", _set(vocab_size=10**9), "must be an integer from 0 to 4194304"),
    ("more positions than the learned table", _set(n_positions=64), "position table holds (32)"),
    ("a context past its bound", _set(n_positions=10**7), "`n_positions: 10000000` must be"),
    ("heads past their bound", _set(n_head=10**6), "`n_head: 1000000` must be an integer"),
    ("a layer count that is not a number", _set(n_layer="2"), "`n_layer: '2'` must be"),
    ("any integer past 2**31", _set(summary_first_dropout=2**40), "1099511627776` is past"),
    ("a nested one", _set(task_specific_params={"x": {"y": [2**40]}}), "params.x.y[0]: 1099511"),
    (
        "a nested part's layers past their bound",
        _set(text_config={"num_hidden_layers": 10**6}),
        "`text_config.num_hidden_layers: 1000000`",
    ),
    ("head_dim times heads past every tensor", _set(head_dim=4096), "heads of `head_dim: 4096`"),
    ("stages deeper than the weights number", _set(depths=[64, 64]), "make 128 layers"),
]


@pytest.mark.parametrize(("why", "change", "says"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_config_that_does_not_describe_its_weights_is_refused(
    gpt2: Path, tmp_path: Path, why: str, change: Callable[[dict[str, Any]], None], says: str
) -> None:
    folder = _edited(gpt2, tmp_path / "edited", change)
    with pytest.raises(HfFolderRefused) as refused:
        describe(_files(folder))
    assert refused.value.path == "config.json"
    assert says in str(refused.value), str(refused.value)
    assert "a config must describe the weights beside it" in str(refused.value)


def test_the_same_numbers_pass_over_the_weights_they_describe(gpt2: Path) -> None:
    folder = describe(_files(gpt2))
    assert folder.context == 32 and folder.architecture == "GPT2LMHeadModel"


def test_the_issues_config_is_refused_at_manifest_and_at_publish(
    cli: Cli, gpt2: Path, tmp_path: Path
) -> None:
    """The published path: `manifest model` refuses the folder, and a manifest written over
    the true config and then pointed at the edited one is refused at publish, naming the file
    and the key; nothing is stored."""
    folder = tmp_path / "gpt"
    shutil.copytree(gpt2, folder)
    out = tmp_path / "model.yaml"
    done = cli("manifest", "model", str(folder), "--name", "text/gpt", "-o", str(out))
    assert done.code == 0, done.err
    config = json.loads((folder / "config.json").read_text())
    config["n_layer"] = 1_000_000
    (folder / "config.json").write_text(json.dumps(config))
    other = tmp_path / "again.yaml"
    again = cli("manifest", "model", str(folder), "--name", "text/gpt", "-o", str(other))
    assert again.code == 1 and "`n_layer: 1000000`" in again.err
    data = yaml.safe_load(out.read_text())
    body = (folder / "config.json").read_bytes()
    for entry in data["files"]:
        if entry["path"] == "gpt/config.json":
            entry["sha256"], entry["size"] = sha(body), len(body)
    dump(out, data)
    assert cli("init").code == 0
    done = cli("publish", str(out))
    assert done.code == 1, done.out
    assert "gpt/config.json" in done.err and "`n_layer: 1000000`" in done.err
    assert "Traceback" not in done.err
    assert "text/gpt" not in cli("list", "model").out


def test_pickled_weights_get_the_bounds_alone(gpt2: Path, tmp_path: Path) -> None:
    """Pickles cannot be read without unpickling: their config is bounded, not matched."""
    folder = tmp_path / "pickled"
    shutil.copytree(gpt2, folder)
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04K\x01.")
    assert describe(_files(folder)).pickled
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "n_layer": 10**6}))
    with pytest.raises(HfFolderRefused, match="`n_layer: 1000000` must be an integer from 0 to"):
        describe(_files(folder))


SMALL = {
    "vocab_size": 64,
    "hidden_size": 16,
    "intermediate_size": 24,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "max_position_embeddings": 32,
}
VISION = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2}
# (why it could be refused, transformers' config class, its arguments, the model class)
ARCHITECTURES: list[tuple[str, str, dict[str, Any], str]] = [
    ("bert", "BertConfig", {**SMALL, "num_labels": 3}, "BertForSequenceClassification"),
    (
        "albert shares its layers",
        "AlbertConfig",
        {**SMALL, "num_hidden_layers": 4, "embedding_size": 8},
        "AlbertModel",
    ),
    (
        "distilbert names its sizes its own way",
        "DistilBertConfig",
        {"vocab_size": 64, "dim": 16, "n_layers": 2, "n_heads": 2, "hidden_dim": 24},
        "DistilBertModel",
    ),
    (
        "a t5 encoder holds no decoder",
        "T5Config",
        {"vocab_size": 64, "d_model": 16, "d_kv": 8, "d_ff": 32, "num_layers": 2},
        "T5EncoderModel",
    ),
    (
        "a bart classifier holds both stacks",
        "BartConfig",
        {
            "vocab_size": 64,
            "d_model": 16,
            "encoder_layers": 2,
            "decoder_layers": 3,
            "encoder_ffn_dim": 32,
            "decoder_ffn_dim": 24,
            "max_position_embeddings": 32,
        },
        "BartForSequenceClassification",
    ),
    (
        "llama with a head_dim of its own",
        "LlamaConfig",
        {**SMALL, "num_key_value_heads": 1, "head_dim": 4},
        "LlamaForCausalLM",
    ),
    (
        "mixtral's experts are saved one by one",
        "MixtralConfig",
        {**SMALL, "num_key_value_heads": 1, "num_local_experts": 3, "num_experts_per_tok": 2},
        "MixtralForCausalLM",
    ),
    (
        "qwen2-moe leaves its dense width unused",
        "Qwen2MoeConfig",
        {
            **SMALL,
            "num_key_value_heads": 1,
            "num_experts": 4,
            "moe_intermediate_size": 12,
            "shared_expert_intermediate_size": 20,
        },
        "Qwen2MoeForCausalLM",
    ),
    (
        "vit",
        "ViTConfig",
        {**VISION, "intermediate_size": 24, "image_size": 16, "patch_size": 8},
        "ViTForImageClassification",
    ),
    (
        "convnext's stages",
        "ConvNextConfig",
        {"hidden_sizes": [8, 16], "depths": [1, 2], "num_stages": 2},
        "ConvNextForImageClassification",
    ),
    (
        "swin's stages",
        "SwinConfig",
        {"image_size": 32, "embed_dim": 8, "depths": [1, 2], "num_heads": [1, 2], "window_size": 2},
        "SwinForImageClassification",
    ),
    (
        "a clip image classifier keeps the vision tower alone",
        "CLIPConfig",
        {
            "text_config": {"hidden_size": 512},
            "vision_config": {**VISION, "intermediate_size": 24, "image_size": 16, "patch_size": 8},
        },
        "CLIPForImageClassification",
    ),
    (
        "efficientnet's num_hidden_layers counts no blocks",
        "EfficientNetConfig",
        {"image_size": 32, "width_coefficient": 0.1, "depth_coefficient": 0.1},
        "EfficientNetForImageClassification",
    ),
]


def test_architectures_as_transformers_saves_them_pass(tmp_path: Path) -> None:
    """Models as ``save_pretrained`` writes them (tied weights left out, experts one by one)
    are not refused: shared layers, an encoder without its decoder, stages, a vision tower
    without the text config's model, an MoE's unused dense width."""
    import transformers

    for i, (why, config, arguments, architecture) in enumerate(ARCHITECTURES):
        made = getattr(transformers, config)(**arguments)
        folder = _saved(tmp_path / f"model-{i}", made, architecture)
        try:
            describe(_files(folder))
        except HfFolderRefused as exc:
            raise AssertionError(f"{why} ({architecture}) refused: {exc}") from None


def test_shapes_are_read_from_the_headers_alone() -> None:
    """The rules as data: numbered stacks from tensor names, dimensions from shapes."""
    weights = Weights.of(
        {
            "model.layers.0.mlp.experts.0.w": (8, 4),
            "model.layers.0.mlp.experts.1.w": (8, 4),
            "model.layers.1.mlp.experts.0.w": (8, 4),
            "model.layers.1.mlp.experts.1.w": (8, 4),
            "model.embed.weight": (100, 4),
            "model.layers.10x.w": (4,),  # not a number: no stack
        }
    )
    assert weights.stacks["model.layers"] == {0, 1}
    assert weights.stacks["model.layers.0.mlp.experts"] == {0, 1}
    assert weights.dims == {4, 8, 100}
    check_config({"num_hidden_layers": 2, "hidden_size": 4, "num_experts": 2}, weights)
    with pytest.raises(ShapeMismatch, match="hold no 3 experts"):
        check_config({"num_experts": 3}, weights)
    check_config({"vocab_size": 1000}, weights)  # no tokenizer: an image model's unused head
    with pytest.raises(ShapeMismatch, match="vocab_size: 1000"):
        check_config({"vocab_size": 1000}, weights, text=True)


def test_tensors_past_the_bound_in_all_are_refused_naming_the_file(
    gpt2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tensors all shards name together are bounded (each name is, by the header's
    reader), so what the shape rules read is bounded however many shards a folder has."""
    from pinbench.artifacts import hf_folder
    from pinbench.artifacts.safetensors import read_header

    count = len(read_header(gpt2 / "model.safetensors").tensors)
    monkeypatch.setattr(hf_folder, "MAX_TENSORS", count - 1)
    with pytest.raises(HfFolderRefused, match=f"more than {count - 1} tensors in all") as info:
        describe(_files(gpt2))
    assert info.value.path == "model.safetensors"


def test_numbered_stacks_are_read_in_time_linear_in_the_names() -> None:
    """Each numbered part's stack is the name up to it (was ``".".join(parts[:i])`` per part:
    quadratic in a name's length); long names with many indices give the same stacks."""
    name = "m" + ".0" * 60 + ".w"
    weights = Weights.of({name: (1,)})
    assert weights.stacks == {"m" + ".0" * i: frozenset({0}) for i in range(60)}

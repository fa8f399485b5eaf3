"""What an LLM engine's artifact gives pinbench's generator beside the engine's own folder
(``catalog.engines`` writes such artifacts; ``registry.engine_formats`` checks them at
publish): the Hugging Face folder's ``tokenizer.json`` (prompts in, answers out),
``config.json`` (its context) and ``generation_config.json`` (its end-of-text token, its
settings) at the artifact's root, and the engine's folder (the folder of the file that names
it: ``genai_config.json``, ``model.bin``) as a real folder the engine opens."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from pinbench.worker.predictors.base import ModelLoadError
from pinbench.worker.predictors.config import ModelFiles

if TYPE_CHECKING:
    from pinbench.worker.generation.decoder import Generator
    from pinbench.worker.generation.processors import Processors


@dataclass
class EngineFolder:
    root: Path
    """The artifact as a folder (its own files, or links to them in ``scratch``)."""
    engine: Path
    """The engine's folder inside ``root``."""
    config: dict[str, Any]
    generation: dict[str, Any]
    context: int | None
    scratch: tempfile.TemporaryDirectory[str] | None = field(default=None)
    given: tempfile.TemporaryDirectory[str] | None = field(default=None)
    """The folder of what the engine is given (``engine_files``), where one was made."""

    def engine_files(self, prefix: str) -> Path:
        """A new folder for what the engine is given, removed with this one."""
        self.given = tempfile.TemporaryDirectory(prefix=prefix)
        return Path(self.given.name)

    def close(self) -> None:
        if self.scratch is not None:
            self.scratch.cleanup()
            self.scratch = None
        if self.given is not None:
            self.given.cleanup()
            self.given = None


def open_folder(model: ModelFiles, *, marker: str, engine: str) -> tuple[EngineFolder, str]:
    """The artifact's folder, its engine folder (the one holding ``marker``, which must be
    one file of the artifact) and the root's files read as data; returns it with the path of
    ``tokenizer.json``. ``ModelLoadError`` names what is missing or malformed."""
    from pinbench.artifacts.hf_folder import read_json
    from pinbench.artifacts.hf_shapes import ShapeMismatch, check_config
    from pinbench.worker.model_folder import FOLDER, confined, materialise

    markers = [p for p in model.files if PurePosixPath(PurePosixPath(p).name).match(marker)]
    if len(markers) != 1:
        raise ModelLoadError(
            model=engine, reason=f"a {engine} model has one {marker}; this one has {len(markers)}"
        )
    missing = [f for f in ("tokenizer.json", "config.json") if f not in model.files]
    if missing:
        raise ModelLoadError(
            model=engine,
            reason=f"a {engine} model needs {' and '.join(missing)} at its artifact's root "
            "(the Hugging Face folder's, which pinbench's generator reads)",
        )
    config = read_json(model.files["config.json"], "config.json")
    generation = (
        read_json(model.files["generation_config.json"], "generation_config.json")
        if "generation_config.json" in model.files
        else {}
    )
    if not isinstance(config, dict) or not isinstance(generation, dict):
        raise ModelLoadError(model="config.json", reason="not a JSON object")
    try:  # its numbers bounded (the context sizes the tokenizer's arrays)
        check_config(config, None)
    except ShapeMismatch as exc:
        raise ModelLoadError(model="config.json", reason=exc.reason) from None
    context = next(
        (
            v
            for k in ("n_positions", "max_position_embeddings")
            if isinstance(v := config.get(k), int) and v > 0
        ),
        None,
    )
    scratch = None
    root = confined(model.files)
    if root is None:
        scratch = tempfile.TemporaryDirectory(prefix="pinbench-engine-")
        root = Path(scratch.name) / FOLDER
        materialise(model.files, root)
    where = root.joinpath(*PurePosixPath(markers[0]).parent.parts)
    return EngineFolder(root, where, config, generation, context, scratch), "tokenizer.json"


def open_for(generator: Generator, model: ModelFiles, *, marker: str, engine: str) -> EngineFolder:
    """``open_folder``, the artifact's tokenizer loaded into ``generator`` (its context and
    end-of-text tokens from the folder's config)."""
    from pinbench.worker.generation.decoder import end_tokens

    folder, tokenizer = open_folder(model, marker=marker, engine=engine)
    generator.load_tokenizer(
        model.files[tokenizer],
        name=tokenizer,
        context=folder.context,
        end=end_tokens(folder.generation, folder.config),
    )
    return folder


def check_vocabulary(generator: Generator, words: list[str], name: str) -> None:
    """Refuse an engine's vocabulary (``words``, by id; ``name``: the file it is in) unless it
    is the artifact's tokenizer's, id for id: the engine reads prompts as ids of its own."""
    from pinbench.registry.engine_vocabulary import VocabularyRefused, check_words

    tokenizer = generator.tokenizer
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    try:  # the comparison publishing made, on the tokenizer as the library reads it
        check_words(name, words, {i: tokenizer.id_to_token(i) for i in range(size)})
    except VocabularyRefused as exc:
        raise ModelLoadError(model=exc.path, reason=exc.reason) from None


def processors_of(folder: EngineFolder) -> Processors:
    """generation_config.json's settings checked as data (``processors``, decision 272), its
    ids within config.json's ``vocab_size``."""
    from pinbench.errors import UserError
    from pinbench.worker.generation.processors import Processors, check_settings

    width = folder.config.get("vocab_size")
    try:
        check_settings(folder.generation)
        processors = Processors.of(folder.generation)
        if not isinstance(width, int) or isinstance(width, bool):
            raise UserError("config.json names no vocab_size")
        processors.check(width)
    except UserError as exc:
        raise ModelLoadError(model="generation_config.json", reason=str(exc)) from None
    return processors


def refuse_settings(folder: EngineFolder, title: str) -> None:
    """Refuse a generation config that sets what changes a token, for an engine whose own loop
    chooses the tokens (it would apply them otherwise than transformers does)."""
    applied = processors_of(folder).applied()
    if applied:
        raise ModelLoadError(
            model="generation_config.json",
            reason=f"it sets {', '.join(sorted(applied))}, which {title}'s own loop would "
            "apply otherwise than transformers does: refused (decision 318)",
        )

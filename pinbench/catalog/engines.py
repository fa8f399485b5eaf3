"""``text/tiny-llama`` converted into each LLM engine's format by the engine's own converter
(issue 87, decision 318): a pinned step with its provenance.

Each conversion runs the converter of the installed, pinned engine package in a child
process, offline, on the trained Hugging Face folder, into a folder of its own, and records
what it did in ``conversion.json`` beside it: the converter, its package and version, its
arguments (paths as ``IN`` and ``OUT``), and the sha256 of every file it read and wrote. Every
converter here is deterministic: converting the same folder again gives the same bytes
(``tests/test_engines.py`` converts twice and compares).

Where a converter runs in pinbench's own environment, the record names the versions of the
packages it converts with beside its own (``imports``); where it runs in an environment of its
own, that environment's digest, which names every wheel.

An engine's artifact is the converter's folder whole, under the engine's name, beside the
Hugging Face folder's ``config.json``, ``generation_config.json`` and tokenizer files, which
pinbench's own generator reads (the prompts' tokens, the context, the end-of-text token, the
generation settings: ``worker.generation.decoder``):

    tiny-llama-ctranslate2/
      config.json  generation_config.json  tokenizer.json  tokenizer_config.json
      conversion.json
      ctranslate2/      config.json  model.bin  vocabulary.json
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from pinbench.catalog import gpt, llama
from pinbench.errors import UserError

KEPT = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")
"""The Hugging Face folder's files every engine artifact keeps at its root."""
CONVERSION = "conversion.json"
TIMEOUT_S = 600


@dataclass(frozen=True)
class Converter:
    engine: str
    """The framework that runs the result (its format's name is ``format``)."""
    format: str
    package: str
    """The distribution whose converter runs (its installed version is recorded)."""
    module: str
    arguments: tuple[str, ...]
    """After ``python -m module``; ``IN`` and ``OUT`` stand for the two folders."""
    weights: str = "float32"
    """What the conversion makes of the weights, as the model's description says it."""
    imports: tuple[str, ...] = ()
    """The packages the converter reads the folder and writes the engine's with, beside its
    own: their versions are recorded where it runs in pinbench's environment."""
    environment: str | None = None
    """The converter's own environment (``environments/converters/<name>.txt``, built once by
    uv from its hash-pinned wheels: ``converter_python``), where it cannot run in pinbench's;
    None: pinbench's own interpreter."""
    source: str | None = None
    """Where the converter is a script of ``package``'s pinned source archive
    (``environments.source_builds``), its folder there: ``module`` is the script's name, run
    by ``gguf_convert``; the record names the archive's sha256."""


def _gguf(outtype: str, weights: str) -> Converter:
    """llama.cpp's converter, a script of llama-cpp-python's pinned source archive, writing
    ``outtype``."""
    return Converter(
        engine="llama-cpp-python",
        format="gguf",
        package="llama-cpp-python",
        module="convert_hf_to_gguf.py",
        arguments=("IN", "--outtype", outtype, "--outfile", "OUT/model.gguf"),
        weights=weights,
        imports=("torch", "transformers", "numpy", "sentencepiece"),
        source="vendor/llama.cpp",
    )


CONVERTERS = {  # by the artifact's name after text/tiny-llama-
    "onnxruntime-genai": Converter(
        engine="onnxruntime-genai",
        format="ort-genai",
        package="onnxruntime-genai",
        module="onnxruntime_genai.models.builder",
        arguments=("-i", "IN", "-o", "OUT", "-p", "fp32", "-e", "cpu"),
        imports=("onnx-ir", "onnx", "torch", "transformers"),
    ),
    "ctranslate2": Converter(
        engine="ctranslate2",
        format="ctranslate2",
        package="ctranslate2",
        module="ctranslate2.converters.transformers",
        arguments=("--model", "IN", "--output_dir", "OUT", "--quantization", "float32"),
        imports=("torch", "transformers"),
    ),
    "ctranslate2-int8": Converter(
        engine="ctranslate2",
        format="ctranslate2",
        package="ctranslate2",
        module="ctranslate2.converters.transformers",
        arguments=("--model", "IN", "--output_dir", "OUT", "--quantization", "int8"),
        weights="int8 weights, computed in int8",
        imports=("torch", "transformers"),
    ),
    "llama-cpp-python": _gguf("f32", "float32"),
    "llama-cpp-python-q8": _gguf(
        "q8_0", "q8_0: 8-bit weights in blocks of 32, each with its scale"
    ),
    "openvino-genai": Converter(
        engine="openvino-genai",
        format="openvino",
        package="optimum-intel",
        module="optimum.commands.optimum_cli",
        arguments=(
            "export", "openvino", "--model", "IN", "--task", "text-generation-with-past",
            "--weight-format", "fp32", "OUT",
        ),
        environment="openvino",
    ),
}  # fmt: skip
CACHE_VARIABLE = "PINBENCH_CONVERTER_CACHE"
"""Where converter environments are built (default ``~/.cache/pinbench/converters``)."""


class ConversionFailed(UserError):
    def __init__(self, *, engine: str, status: int, tail: str) -> None:
        super().__init__(f"converting to {engine} failed (exit status {status}): {tail}")
        self.engine = engine
        self.status = status
        self.tail = tail


def digests(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder``, by its path there."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def convert(converter: Converter, source: Path, out: Path) -> dict[str, object]:
    """``source`` (a Hugging Face folder) converted into ``out`` (made here, must not exist);
    returns the conversion's record. The converter's process sees little of this process's
    environment (``PASSED_ON``: no ``PYTHONPATH`` to import another package's version than the one
    recorded) and is offline. It runs in a folder of its own, so both paths are made absolute
    first: a relative one would be looked up there, and a Hugging Face converter takes a folder
    it does not find for a Hub repository's name."""
    source, out = source.absolute(), out.absolute()
    named = {"IN": str(source), "OUT": str(out)}
    arguments = [
        named.get(a, str(out / a[4:]) if a.startswith("OUT/") else a) for a in converter.arguments
    ]
    python, environment = converter_python(converter.environment)
    command, archive = [python, "-m", converter.module], None
    if converter.source is not None:
        command, archive = _script(converter)
    with tempfile.TemporaryDirectory(prefix="pinbench-convert-") as cache:
        env = {k: v for k, v in os.environ.items() if k in PASSED_ON} | OFFLINE | {"HF_HOME": cache}
        try:
            done = subprocess.run(
                [*command, *arguments],
                env=env,
                cwd=cache,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            shutil.rmtree(out, ignore_errors=True)
            raise ConversionFailed(
                engine=converter.engine, status=-1, tail=f"still running after {TIMEOUT_S} s"
            ) from None
        packages = converter.imports if archive else (converter.package, *converter.imports)
        versions = _versions(python, packages, env, converter)
    if done.returncode != 0:
        shutil.rmtree(out, ignore_errors=True)
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise ConversionFailed(
            engine=converter.engine, status=done.returncode, tail=" | ".join(tail)
        )
    return {
        "converter": f"python {archive['script']}" if archive else f"python -m {converter.module}",
        "package": converter.package,
        "version": archive["version"] if archive else versions[converter.package],
        **({"source_archive": archive} if archive else {}),
        "arguments": list(converter.arguments),
        **({"environment": environment} if environment else {"packages": versions}),
        "inputs": digests(source),
        "outputs": digests(out),
    }


def _script(converter: Converter) -> tuple[list[str], dict[str, str]]:
    """The command that runs ``converter``'s script from its package's pinned source archive
    (``gguf_convert``), and what the record says of the archive."""
    from pinbench.catalog import gguf_convert
    from pinbench.environments.source_builds import SOURCE_BUILDS, source_tree

    assert converter.source is not None
    build = SOURCE_BUILDS[converter.package]
    say = partial(print, file=sys.stderr)
    tree = source_tree(converter.package, say) / converter.source
    record = {
        "archive": build.archive,
        "sha256": build.sha256,
        "script": f"{converter.source}/{converter.module}",
        "version": build.version,
        "through": "pinbench's catalog/gguf_convert.py (names a GPT-2 BPE's pre-tokenizer)",
    }
    return [sys.executable, str(Path(gguf_convert.__file__)), str(tree)], record


PASSED_ON = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
"""What a converter's process sees of this process's environment."""
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "PYTHONNOUSERSITE": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}


def _versions(
    python: str, packages: tuple[str, ...], env: dict[str, str], converter: Converter
) -> dict[str, str]:
    """Each package's installed version in the interpreter ``python``, as the converter's own
    process finds it."""
    code = (
        "import json, sys; from importlib.metadata import version; "
        "print(json.dumps({p: version(p) for p in sys.argv[1:]}))"
    )
    done = subprocess.run(
        [python, "-c", code, *packages], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:]
        raise ConversionFailed(engine=converter.engine, status=done.returncode, tail=" ".join(tail))
    found: dict[str, str] = json.loads(done.stdout)
    return found


def converter_python(name: str | None) -> tuple[str, str | None]:
    """The interpreter a converter runs in, and its environment's digest: pinbench's own, or
    the environment ``environments/converters/<name>.txt`` pins, built on first use."""
    if name is None:
        return sys.executable, None
    from pinbench.environments import LOCKS, parse_lock
    from pinbench.environments.venv import materialise
    from pinbench.registry.lockfile import LockedEnvironment
    from pinbench.registry.manifest_parts import Platform

    pinned = parse_lock((LOCKS / "converters" / f"{name}.txt").read_text(encoding="utf-8"))
    env = LockedEnvironment(
        framework=f"converter-{name}",
        version="1",
        platform=Platform(),
        image=None,
        requirements=pinned,
        python="3.11",
    )
    built = materialise(converter_cache(), env, say=lambda text: print(text, file=sys.stderr))
    return str(built.python), built.digest


def converter_cache() -> Path:
    """Where converter environments are built (``CACHE_VARIABLE``)."""
    from pinbench.config import env_folder

    return env_folder(CACHE_VARIABLE, "~/.cache/pinbench/converters")


def export(root: Path, weights: Path, engines: Iterable[str]) -> list[Path]:
    """Each of ``engines``' artifacts of the trained folder ``weights`` under ``root`` (every
    conversion whose result that engine runs), with its manifest."""
    from pinbench.catalog.files import dump, entry

    manifests = []
    chosen = set(engines)
    for key, converter in CONVERTERS.items():
        if converter.engine not in chosen:
            continue
        folder = root / f"{llama.FOLDER}-{key}"
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        record = convert(converter, weights, folder / converter.engine)
        for name in KEPT:
            shutil.copyfile(weights / name, folder / name)
        (folder / CONVERSION).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        files = sorted(p for p in folder.rglob("*") if p.is_file())
        manifests.append(
            dump(
                root / f"model-{llama.FOLDER}-{key}.yaml",
                {
                    "kind": "model",
                    "name": f"{llama.NAME}-{key}",
                    "version": llama.VERSION,
                    "description": f"{llama.NAME}'s weights converted by {converter.package} "
                    f"{record['version']}'s own converter ({converter.weights}; {CONVERSION} "
                    "records its arguments and every digest), with the folder's tokenizer and "
                    f"config (corpus as {gpt.NAME}'s)",
                    "license": "Apache-2.0",
                    "format": converter.format,
                    "framework": {"name": converter.engine, "range": RANGES[converter.engine]},
                    "files": [
                        {**entry(root, f), "path": f.relative_to(folder).as_posix()} for f in files
                    ],
                    "outputs": [{"name": "logits", "type": "generation"}],
                },
            )
        )
    return manifests


RANGES = {
    "onnxruntime-genai": ">=0.18 <1",
    "ctranslate2": ">=4.5 <5",
    "openvino-genai": ">=2026.0.0 <2027.0.0",
    "llama-cpp-python": ">=0.3.30 <0.4",
}

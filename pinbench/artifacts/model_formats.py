"""What format a model file is in, from its own bytes: the one place pinbench recognises one.

Each format is told by what identifies it and nothing more, every read bounded, nothing of the
model executed or unpickled:

- ``onnx``: a protobuf ``ModelProto`` (its top-level fields walked by their lengths, never
  read: ``ir_version`` and a ``graph``, every field one ``onnx.proto`` gives ``ModelProto``);
- ``savedmodel``: a file named ``saved_model.pb`` whose top-level fields are ``SavedModel``'s
  (``saved_model_schema_version``, ``meta_graphs``);
- ``tflite``: a FlatBuffer whose file identifier (bytes 4-8) is ``TFL3``;
- ``keras-h5``: HDF5's signature ``\\x89HDF\\r\\n\\x1a\\n`` (at 0, or after a user block of
  512, 1024, 2048... bytes): Keras 2's format;
- ``keras``: a zip holding ``config.json`` and ``model.weights.h5`` (Keras 3's ``.keras``);
- ``safetensors``: an 8-byte little-endian header length, then that many bytes of a JSON
  object (its first byte ``{``; ``artifacts.safetensors`` reads it whole where it is used);
- ``torchscript`` / ``torch-export``: PyTorch's zip archives, told apart by their members
  (``ROOT/code/`` and ``ROOT/data.pkl``; ``archive_format`` or
  ``serialized_exported_program.json``);
- ``torch-state-dict`` / ``torch-pickle``: ``torch.save``'s output (a zip with
  ``ROOT/data.pkl``, or the legacy stream of pickles) or a bare pickle, told apart by the
  globals its pickle names, read by ``pickletools.genops`` (which parses opcodes and runs
  nothing): only tensors, storages, dtypes and containers (what ``torch.load(weights_only=
  True)`` allows), with the plain data a checkpoint keeps beside them (``pickle_data``: a
  Lightning checkpoint's omegaconf hyper-parameters), make a state dict (or a checkpoint of
  them); any other global (a module's class) makes a pickled object, which only unpickling
  with its code can load. Every global it would load is kept (``Found.globals``), and a
  refusal of it names them with the routes that publish it (``pickle_refusal``).
"""

from __future__ import annotations

import io
import pickletools
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from pinbench.artifacts.zipmember import MemberTooLarge, read_member

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
HDF5_OFFSETS = (0, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
"""Where HDF5's superblock may start: 0, or after a user block of 512 bytes times a power of
two (the search is bounded here at 64 KiB)."""
MAX_PICKLE_BYTES = 16 << 20
"""The most bytes of a pickle read to name its globals: a state dict's ``data.pkl`` holds
names and storage keys only (a few hundred kilobytes for billions of weights)."""
MAX_PROTO_FIELDS = 64
"""Top-level protobuf fields walked to identify a ModelProto or a SavedModel."""
TORCH_MAGIC = 0x1950A86A20F9469CFC6C
"""The first pickle of ``torch.save``'s legacy (non-zip) format."""
PICKLE_PROTOCOLS = range(2, 6)
MAX_GLOBALS_SHOWN = 12
"""The most globals a pickle's refusal names (then how many more)."""
PICKLE_SUFFIXES = (".pt", ".pth", ".pt.tar", ".pth.tar")
"""The names a ``torch-pickle`` model's file has: the one list its predictor finds it by,
publish checks it by (``registry.declared_format``) and a refusal's rename note names.
``.pth.tar`` is how older research code names ``torch.save``'s output (the ImageNet example's
``checkpoint.pth.tar``), taken as a state dict's weights are."""

WHAT = {
    "onnx": "an ONNX model",
    "savedmodel": "a TensorFlow SavedModel (saved_model.pb)",
    "tflite": "a TensorFlow Lite file",
    "keras-h5": "an HDF5 file (Keras 2)",
    "keras": "a Keras 3 archive (.keras)",
    "safetensors": "a safetensors file",
    "torchscript": "a TorchScript archive (torch.jit.save)",
    "torch-export": "a torch.export archive (torch.export.save)",
    "torch-state-dict": "a PyTorch state dict (torch.save of tensors only)",
    "torch-pickle": "a pickled Python object (torch.save of a module)",
}
"""Each format recognised, as a message names it."""

_ONNX_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2}
"""``ModelProto``'s fields (onnx.proto) and their wire types (0 varint, 2 length-delimited)."""
_SAVED_MODEL_FIELDS = {1: 0, 2: 2}
_WEIGHTS_ONLY = frozenset(
    {
        "collections.OrderedDict",
        "collections.Counter",
        "torch.nn.parameter.Parameter",
        "torch.serialization._get_layout",
        "torch.Size",
        "torch.Tensor",
        "torch.device",
        "_codecs.encode",
        "builtins.bytearray",
        "builtins.set",
        "builtins.complex",
        "torch._tensor._rebuild_from_type_v2",
        "torch.storage.UntypedStorage",
        "torch.storage.TypedStorage",
    }
)
"""The globals ``torch.load(weights_only=True)`` allows by name (torch 2.x's
``_weights_only_unpickler._get_allowed_globals``); with ``_TORCH_NAMES`` below."""
_TORCH_NAMES = re.compile(
    r"torch\.(u?int\d+|float\w*|bfloat16|complex\d+|c?half|cfloat|cdouble|double|short|int|"
    r"long|bool|q(u)?int\w+|bits\w+|per_(tensor|channel)_\w+|\w+Storage|\w+Tensor)"
    r"|torch\._utils\._rebuild_\w+"
)
"""torch's dtypes, quantisation schemes, storage and tensor classes, rebuild functions."""


@dataclass(frozen=True, slots=True)
class Found:
    """A file's format, and what a message says it is."""

    format: str
    detail: str = ""
    """More about it, for messages (the global that makes a pickle an object's)."""
    globals: tuple[str, ...] = ()
    """A pickled object's globals that no state dict names, each once, in the pickle's
    order: what unpickling it would import and call (empty where they were not read)."""

    @property
    def what(self) -> str:
        return WHAT[self.format] + (f" ({self.detail})" if self.detail else "")


def identify(path: Path, name: str | None = None) -> Found | None:
    """The format of the model file at ``path`` by its bytes; None for a file in none of them
    (labels, a config, a vocabulary). ``name``: the file's name in its manifest, where ``path``
    is a stored blob's (a SavedModel's graph is known by its name, ``saved_model.pb``)."""
    with path.open("rb") as f:
        head = f.read(16)
        if head.startswith(HDF5_SIGNATURE) or _hdf5_later(f):
            return Found("keras-h5")
    if head[4:8] == b"TFL3":
        return Found("tflite")
    if head.startswith(b"PK\x03\x04"):
        return _zip(path)
    if len(head) >= 2 and head[0] == 0x80 and head[1] in PICKLE_PROTOCOLS:
        return _pickle_stream(path)
    if len(head) >= 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") >= 2:
        return Found("safetensors")
    if (name or path.name) == "saved_model.pb" and _proto(path, _SAVED_MODEL_FIELDS, required=(2,)):
        return Found("savedmodel")
    if head[:1] == b"\x08" and _proto(path, _ONNX_FIELDS, required=(1, 7)):
        return Found("onnx")
    return None


def _hdf5_later(f: io.BufferedReader) -> bool:
    for offset in HDF5_OFFSETS[1:]:
        f.seek(offset)
        block = f.read(len(HDF5_SIGNATURE))
        if len(block) < len(HDF5_SIGNATURE):
            return False
        if block == HDF5_SIGNATURE:
            return True
    return False


def _zip(path: Path) -> Found | None:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if "config.json" in names and "model.weights.h5" in names:
                return Found("keras")
            if any(
                n.endswith(("archive_format", "/serialized_exported_program.json")) for n in names
            ):
                return Found("torch-export")
            pickles = sorted(n for n in names if n.endswith("/data.pkl") and n.count("/") == 1)
            if not pickles:
                return None
            if any(n.endswith("/constants.pkl") or "/code/" in n for n in names):
                return Found("torchscript")
            try:
                data = read_member(archive, pickles[0], limit=MAX_PICKLE_BYTES)
            except MemberTooLarge as exc:
                return Found("torch-pickle", f"{exc}: its globals were not read")
    except (zipfile.BadZipFile, OSError, ValueError, KeyError):
        return None
    return _classified(data, 0)


def _pickle_stream(path: Path) -> Found:
    """A bare pickle, or ``torch.save``'s legacy stream (magic number, protocol, system
    facts, then the object: the fourth pickle is the one classified)."""
    with path.open("rb") as f:
        data = f.read(MAX_PICKLE_BYTES)
    at = 0
    first, at = _globals(data, at)
    if first is None:
        return Found("torch-pickle", "its opcodes do not parse as a pickle")
    if at < len(data) and _first_int(data) == TORCH_MAGIC:
        for _ in range(2):  # the protocol version, the system facts
            _, at = _globals(data, at)
        return _classified(data, at)
    return _verdict(first)


def _classified(data: bytes, at: int) -> Found:
    names, _ = _globals(data, at)
    if names is None:
        return Found("torch-pickle", "its opcodes do not parse as a pickle")
    return _verdict(names)


def _verdict(names: list[str]) -> Found:
    from pinbench.artifacts.pickle_data import plain_data

    foreign = [
        n
        for n in names
        if n not in _WEIGHTS_ONLY and not _TORCH_NAMES.fullmatch(n) and not plain_data(n)
    ]
    if foreign:
        return Found("torch-pickle", f"it names {foreign[0]}", tuple(dict.fromkeys(foreign)))
    return Found("torch-state-dict")


def pickle_refusal(found: Found, name: str | None) -> str:
    """Why a pickled object (``found``, file ``name``) is refused, and the routes that publish
    it (``pickle_routes``). The globals are those its opcodes name (``_globals``: nothing was
    unpickled)."""
    names = found.globals
    if names:
        shown = ", ".join(names[:MAX_GLOBALS_SHOWN])
        more = len(names) - MAX_GLOBALS_SHOWN
        shown += f" and {more} more" if more > 0 else ""
        what = (
            f"a pickled Python object: loading it would import and call {shown} (read from "
            "its opcodes; nothing was run), which torch.load(weights_only=True) refuses"
        )
    else:
        what = f"a pickled Python object ({found.detail or 'its globals were not read'})"
    return f"{what}. {pickle_routes(name)}"


def pickle_routes(name: str | None = None) -> str:
    """The routes that publish a pickled model, the same words wherever a pickle is refused
    (``manifest model``, publish, a run, a server): its tensors with the builder that makes
    its module, a pickle vouched for and allowed per run, or a format that is no pickle. With
    ``name`` (the file's), a note where its name is not one a ``torch-pickle`` run finds."""
    rename = (
        ""
        if name is None or name.lower().endswith(PICKLE_SUFFIXES)
        else f"; as torch-pickle, name the file {', '.join(PICKLE_SUFFIXES[:-1])} or "
        f"{PICKLE_SUFFIXES[-1]} (where its run finds it)"
    )
    return (
        "To publish it: save its tensors alone (torch.save(model.state_dict(), 'weights.pt'); "
        "from a checkpoint, torch.save(checkpoint['state_dict'], 'weights.pt')) and give them "
        "with the .py file whose function builds the module: pinbench manifest model "
        "weights.pt builder.py (format: torch-state-dict; docs/processing.md: a model's own "
        "builder), or, where pinbench ships its architecture, with safetensors.torch.save_file "
        "(format: safetensors, naming the `architecture`); or, only if you vouch for whoever "
        "made the file, declare format: torch-pickle and trusted: true (every run then needs "
        "--allow-pickle, a server's operator pinbench serve --allow-pickle); or save the model "
        "as TorchScript (torch.jit.script(model).save('model.pt')) or a torch.export program "
        f"(.pt2){rename}"
    )


def _first_int(data: bytes) -> int | None:
    try:
        for op, arg, _ in pickletools.genops(io.BytesIO(data)):
            if op.name in ("LONG1", "LONG4", "BININT", "BININT1", "BININT2", "LONG"):
                return int(arg) if isinstance(arg, int) else None
            if op.name not in ("PROTO", "FRAME"):
                return None
    except (ValueError, EOFError):
        return None
    return None


MAX_OPCODES = 1_000_000
"""The most opcodes of one pickle read for its globals (a state dict of 10,000 tensors has
about 300,000): past them the rest is not read, and the pickle is taken as naming a global
that is not a tensor's (a hostile file's opcodes cost CPU, never a verdict of safe)."""
MAX_GLOBALS = 1_000
"""The most distinct globals kept; past them one more, ``(more).global``, says so."""
MAX_GLOBAL_CHARS = 256
"""A global's longest ``module.name``; a longer one is kept as ``(long name).global``."""


def _globals(data: bytes, at: int) -> tuple[list[str] | None, int]:
    """The ``module.name`` of every global the pickle starting at ``at`` names (each once, at
    most ``MAX_GLOBALS``), and where it ends; None where its opcodes do not parse.
    ``STACK_GLOBAL`` takes its two strings from the stack: they are the strings pushed (or
    fetched from the memo) just before it. Bounded: ``MAX_OPCODES`` read, each name at most
    ``MAX_GLOBAL_CHARS``."""
    stream = io.BytesIO(data)
    stream.seek(at)
    names: dict[str, None] = {}
    strings: list[str] = []
    memo: dict[int, str] = {}
    last: str | None = None

    def named(text: str) -> None:
        if len(text) > MAX_GLOBAL_CHARS:
            text = "(long name).global"
        if text in names or len(names) < MAX_GLOBALS:
            names[text] = None
        else:
            names["(more).global"] = None

    try:
        for count, (op, arg, _) in enumerate(pickletools.genops(stream)):
            if count >= MAX_OPCODES:
                named(f"(not read past {MAX_OPCODES:,} opcodes).global")
                return list(names), stream.tell()
            name = op.name
            if name == "GLOBAL" or name == "INST":
                module, _, attr = str(arg).partition(" ")
                named(_python3_name(module, attr))
            elif name == "STACK_GLOBAL":
                # two strings it can name, or a global this reading cannot see: foreign
                if len(strings) < 2:
                    named("(unseen).global")
                elif len(strings[-2]) + len(strings[-1]) >= MAX_GLOBAL_CHARS:
                    named("(long name).global")
                else:
                    named(f"{strings[-2]}.{strings[-1]}")
            elif name in ("EXT1", "EXT2", "EXT4"):  # a global from copyreg's registry
                named(f"(extension {arg}).global")
            elif name in (
                "SHORT_BINUNICODE",
                "BINUNICODE",
                "BINUNICODE8",
                "UNICODE",
                "SHORT_BINSTRING",  # unpickled as str under protocol 2 and up
                "BINSTRING",
                "STRING",
            ):
                strings.append(str(arg))
                last = str(arg)
                continue
            elif name in ("BINGET", "LONG_BINGET", "GET") and isinstance(arg, int) and arg in memo:
                strings.append(memo[arg])
                continue
            elif name in ("BINPUT", "LONG_BINPUT", "PUT") and last is not None:
                memo[int(arg) if arg is not None else len(memo)] = last
                continue
            elif name == "MEMOIZE" and last is not None:
                memo[len(memo)] = last
                continue
            last = None
    except (ValueError, EOFError):
        return None, at
    return list(names), stream.tell()


def _python3_name(module: str, attr: str) -> str:
    """A protocol 2 global's name as unpickling maps it (``fix_imports``: Python's own
    ``_compat_pickle`` tables): ``__builtin__ long`` is ``builtins.int``."""
    import _compat_pickle

    if (module, attr) in _compat_pickle.NAME_MAPPING:
        module, attr = _compat_pickle.NAME_MAPPING[(module, attr)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    return f"{module}.{attr}"


def _varint(f: io.BufferedReader) -> int | None:
    value = shift = 0
    for _ in range(10):
        byte = f.read(1)
        if not byte:
            return None
        value |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            return value
        shift += 7
    return None


def _proto(path: Path, fields: dict[int, int], *, required: tuple[int, ...]) -> bool:
    """Whether the file's top-level protobuf fields (up to ``MAX_PROTO_FIELDS``, each skipped
    by its length, never read) are all ``fields`` with their wire types, ending at the file's
    end, and include every ``required`` one."""
    size = path.stat().st_size
    seen: set[int] = set()
    with path.open("rb") as f:
        for _ in range(MAX_PROTO_FIELDS):
            if f.tell() == size:
                break
            key = _varint(f)
            if key is None or fields.get(key >> 3) != key & 7:
                return False
            length = _varint(f)
            if length is None:
                return False
            if key & 7 == 2:
                if f.tell() + length > size:
                    return False
                f.seek(length, io.SEEK_CUR)
            seen.add(key >> 3)
    return all(r in seen for r in required)

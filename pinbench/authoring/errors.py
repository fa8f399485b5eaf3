"""What can go wrong while writing a manifest from files; each says what to do instead."""

from __future__ import annotations

from pinbench.artifacts.model_formats import Found, pickle_refusal
from pinbench.errors import UserError


class AuthoringError(UserError):
    """A manifest cannot be written from what was given: nothing is written."""


class MissingExtra(AuthoringError):
    """Reading this format needs a library that is not installed here."""

    def __init__(self, *, module: str, extra: str, what: str) -> None:
        super().__init__(
            f"reading {what} needs the Python package {module!r}, which is not installed: "
            f"pip install 'pinbench[{extra}]'"
        )
        self.module = module
        self.extra = extra
        self.what = what


class NotAModel(AuthoringError):
    """A file (or folder) is not a model in a format pinbench describes."""

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class PickleRefused(NotAModel):
    """A pickled object (``torch.save`` of a module, a checkpoint holding objects): it cannot
    be read without running the code its globals name. The refusal names those globals (read
    from its opcodes) and the routes that publish it (``model_formats.pickle_refusal``)."""

    def __init__(self, *, path: str, globals: tuple[str, ...], unread: str = "") -> None:
        found = Found("torch-pickle", unread, globals)
        super().__init__(path=path, reason=pickle_refusal(found, path))
        self.globals = globals
        self.unread = unread


class ModelCountError(AuthoringError):
    """Not exactly one model among the files given."""

    def __init__(self, *, models: list[str]) -> None:
        found = ", ".join(models) if models else "none"
        super().__init__(
            "give exactly one model (.onnx, a TorchScript archive of any name, .pt2, .keras, "
            f"or a SavedModel folder) and any other files of the artifact; found {found}"
        )
        self.models = models


class MissingSidecar(AuthoringError):
    """An ONNX model keeps tensor data in a file that is not beside it."""

    def __init__(self, *, model: str, tensor: str, location: str, problem: str) -> None:
        super().__init__(
            f"{model}: tensor {tensor!r} keeps its data in {location!r}, which {problem}"
        )
        self.model = model
        self.tensor = tensor
        self.location = location
        self.problem = problem


class OutsideFolder(AuthoringError):
    """A file is not inside the folder the manifest's paths are relative to."""

    def __init__(self, *, path: str, folder: str, symlink: bool = False) -> None:
        how = " (a symlink to a file outside it)" if symlink else ""
        super().__init__(
            f"{path} is outside {folder}{how}, the folder the manifest's file paths are relative "
            "to (the -o file's folder, else the current folder): move the file there, or "
            "write the manifest (-o) in a folder that holds every file"
        )
        self.path = path
        self.folder = folder
        self.symlink = symlink


class UndeclarableType(AuthoringError):
    """A model input has an element type a manifest cannot declare."""

    def __init__(self, *, name: str, element_type: str, allowed: list[str]) -> None:
        super().__init__(
            f"input {name!r} has element type {element_type}; a manifest declares one of "
            f"{', '.join(allowed)}"
        )
        self.name = name
        self.element_type = element_type
        self.allowed = allowed


class NoFrameworkLock(AuthoringError):
    """No hash-pinned environment lock for this framework release."""

    def __init__(self, *, framework: str, version: str, locked: dict[str, str]) -> None:
        have = ", ".join(f"{n}=={v}" for n, v in sorted(locked.items()))
        super().__init__(
            f"no hash-pinned environment for {framework}=={version}: pinbench ships locks "
            f"for {have} only (pinbench/environments/<framework>.txt, which also pin the "
            "evaluator's own dependencies)"
        )
        self.framework = framework
        self.version = version
        self.locked = locked

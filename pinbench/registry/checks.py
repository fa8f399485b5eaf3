"""What the registry asks of the plug-ins that read samples and score (issue 75, decision 301).

A dataset's labels, its files, a model's step order, a CTC alphabet and an ONNX model's class
names are checked when a manifest is published or a lockfile is read, so that what cannot be
run is refused then. How each is read is the tasks' and the evaluator's business, a layer
above; the registry asks through ``Checks`` and never imports them. The plug-ins register one
provider (``install``); until one has, the first ask loads the provider pinbench ships,
named by ``PROVIDER`` (as an application names its installed apps), so that any caller — the
CLI, the server, a worker, a test — gets the same checks without wiring them. A test may
``install`` its own to exercise the registry alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from pinbench.errors import UserError

PROVIDER = "pinbench.tasks.checks"
"""The module that installs pinbench's own provider when it is imported."""


class CheckRefused(UserError):
    """A provider's refusal, as plain data: the registry says where it happened."""

    def __init__(self, *, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Checks(Protocol):
    def publishable_tasks(self) -> tuple[str, ...]:
        """The tasks a dataset may be published for."""
        ...

    def check_labels(self, task: str, labels: Any, *, per_file: bool) -> None:
        """``task`` is known and reads this labels section (``ValueError`` naming why not)."""
        ...

    def generates(self, task: str) -> bool:
        """Whether ``task``'s datasets are answered by generating text."""
        ...

    def check_dataset_files(self, manifest: Any, where: Callable[[Any], Path]) -> None:
        """A ``DatasetManifest``'s files make the dataset it declares (``sourcing.FileProblem``
        if not); ``where`` gives each ``FileEntry``'s verified bytes."""
        ...

    def check_step_order(self, steps: Any) -> None:
        """An input's steps run in an order the pipeline accepts (``CheckRefused``)."""
        ...

    def ctc_alphabet(self, ctc: Any, files: Mapping[str, Path], *, output: str) -> Sequence[str]:
        """The classes of an output's CTC alphabet, read as a run reads them (``CheckRefused``)."""
        ...

    def check_class_names(self, labels: Any, files: Mapping[str, Path], *, output: str) -> None:
        """An output's class names read from the model's metadata as a run reads them
        (``CheckRefused``)."""
        ...


_installed: list[Checks] = []


def install(provider: Checks) -> None:
    """Make ``provider`` the one the registry asks (the last installed wins)."""
    _installed.append(provider)


def uninstall(provider: Checks) -> None:
    """Take back a provider ``install`` made current (a test's own)."""
    _installed.remove(provider)


def checks() -> Checks:
    """The installed provider, loading pinbench's own the first time none is."""
    if not _installed:
        importlib.import_module(PROVIDER)
        if not _installed:
            raise RuntimeError(f"{PROVIDER} installed no checks")
    return _installed[-1]

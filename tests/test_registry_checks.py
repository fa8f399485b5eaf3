"""The registry asks the plug-ins through one protocol (``registry.checks``, issue 75, decision
301): what it checks of a dataset's labels and task, and which tasks may be published, is the
installed provider's answer, never an import of the tasks. A provider a test installs replaces
pinbench's own; without one, pinbench's own is loaded on the first ask."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pinbench.errors import UserError
from pinbench.registry.checks import CheckRefused, Checks, checks, install, uninstall
from pinbench.registry.dataset_manifest import DatasetManifest
from pinbench.registry.manifest import parse_manifest
from pinbench.registry.manifest_parts import ManifestError
from pinbench.registry.supported import Unsupported, check_supported
from tests.helpers import dataset_manifest

FILES = [{"path": "x.npy", "sha256": "a" * 64}, {"path": "y.npy", "sha256": "b" * 64}]


class Strict:
    """A provider that knows one task, ``colours``, and refuses every labels section."""

    asked: list[str]

    def __init__(self) -> None:
        self.asked = []

    def publishable_tasks(self) -> tuple[str, ...]:
        return ("colours",)

    def check_labels(self, task: str, labels: Any, *, per_file: bool) -> None:
        self.asked.append(task)
        raise ValueError(f"the test's provider refuses task {task}'s labels")

    def generates(self, task: str) -> bool:
        return False

    def check_dataset_files(self, manifest: Any, where: Callable[[Any], Path]) -> None:
        raise AssertionError("not asked here")

    def check_step_order(self, steps: Any) -> None:
        raise CheckRefused(reason="the test's provider refuses every order")

    def ctc_alphabet(self, ctc: Any, files: Mapping[str, Path], *, output: str) -> Sequence[str]:
        raise CheckRefused(reason="no alphabet")

    def check_class_names(self, labels: Any, files: Mapping[str, Path], *, output: str) -> None:
        raise CheckRefused(reason="no names")


@pytest.fixture
def strict() -> Iterator[Strict]:
    provider = Strict()
    install(provider)
    yield provider
    uninstall(provider)


def test_a_dataset_manifests_labels_are_the_installed_providers_to_check(strict: Strict) -> None:
    with pytest.raises(ManifestError, match="the test's provider refuses task classification"):
        parse_manifest(dataset_manifest("d", "1.0.0", FILES))
    assert strict.asked == ["classification"]


def test_which_tasks_may_be_published_is_the_providers_answer() -> None:
    manifest = parse_manifest(dataset_manifest("d", "1.0.0", FILES))
    assert isinstance(manifest, DatasetManifest)
    check_supported(manifest)  # pinbench's own provider: classification is published
    provider = Strict()
    install(provider)
    try:
        with pytest.raises(Unsupported) as refused:
            check_supported(manifest)
    finally:
        uninstall(provider)
    assert refused.value.supported == ("colours",)


def test_the_provider_taken_back_leaves_pinbenchs_own(strict: Strict) -> None:
    uninstall(strict)
    try:
        assert type(checks()).__name__ == "TaskChecks"
        assert isinstance(parse_manifest(dataset_manifest("d", "1.0.0", FILES)), DatasetManifest)
    finally:
        install(strict)


def test_pinbenchs_own_provider_is_loaded_on_the_first_ask_and_answers_as_the_tasks_do() -> None:
    code = (
        "import sys\n"
        "from pinbench.registry import checks\n"
        "assert 'pinbench.tasks.checks' not in sys.modules\n"
        "provider = checks.checks()\n"
        "print(type(provider).__module__, 'classification' in provider.publishable_tasks())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["pinbench.tasks.checks", "True"]


def test_a_refusal_crosses_the_protocol_as_plain_data() -> None:
    provider: Checks = checks()
    with pytest.raises(CheckRefused) as refused:
        provider.check_step_order(_channels_first_then_resize())
    assert isinstance(refused.value, UserError)
    assert "resize" in refused.value.reason


def _channels_first_then_resize() -> Any:
    import msgspec

    from pinbench.registry.steps import InputStep

    return [
        msgspec.convert({"layout": {"to": "NCHW"}}, InputStep),
        msgspec.convert({"resize": {"size": [8, 8]}}, InputStep),
    ]

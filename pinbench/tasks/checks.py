"""pinbench's own answers to what the registry asks (``registry.checks``, decision 301): the
tasks check a dataset's labels and files, the pipeline an input's step order, the
text-recognition task a CTC alphabet, the class-name reader an ONNX model's metadata. Imported,
it installs itself; each answer imports what it reads with only when asked."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pinbench.registry.checks import CheckRefused, install

if TYPE_CHECKING:
    from pinbench.registry.dataset_manifest import DatasetManifest
    from pinbench.registry.manifest_parts import FileEntry


class TaskChecks:
    def publishable_tasks(self) -> tuple[str, ...]:
        from pinbench.tasks.registry import TASKS, datasets_of

        return tuple(n for n in TASKS if datasets_of(n).publishable)

    def check_labels(self, task: str, labels: Any, *, per_file: bool) -> None:
        from pinbench.tasks.registry import check_dataset

        check_dataset(task, labels, per_file=per_file)

    def generates(self, task: str) -> bool:
        from pinbench.tasks.registry import UnknownTask, datasets_of

        try:
            return datasets_of(task).generates
        except UnknownTask as exc:
            raise ValueError(str(exc)) from None

    def check_dataset_files(
        self, manifest: DatasetManifest, where: Callable[[FileEntry], Path]
    ) -> None:
        from pinbench.tasks.dataset_files import check_dataset_files

        check_dataset_files(manifest, where)

    def check_step_order(self, steps: Any) -> None:
        from pinbench.worker.pipeline import check_order
        from pinbench.worker.pipeline_errors import PipelineError

        try:
            check_order(steps)
        except PipelineError as exc:
            raise CheckRefused(reason=str(exc)) from None

    def ctc_alphabet(self, ctc: Any, files: Mapping[str, Path], *, output: str) -> Sequence[str]:
        from pinbench.tasks.text_recognition.ctc import AlphabetProblem, read_alphabet

        try:
            return read_alphabet(ctc, files, output=output).classes
        except AlphabetProblem as exc:
            raise CheckRefused(reason=str(exc)) from None

    def check_class_names(self, labels: Any, files: Mapping[str, Path], *, output: str) -> None:
        from pinbench.tasks.class_names import ClassNamesProblem, class_names

        try:
            class_names(labels, files, output=output)
        except ClassNamesProblem as exc:
            raise CheckRefused(reason=str(exc)) from None


install(TaskChecks())

"""No task name or metric name outside its folder (issue 35, decision 124): the CLI, reports,
verdicts, bisect and the benchmark table ask the task registry. A string constant equal to a
registered task's name or one of its metrics' names, in ``pinbench/`` outside
``pinbench/tasks/`` (Python by its syntax tree, templates by their Jinja expressions), fails
here unless ``ALLOWED`` lists it with the reason."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pinbench.tasks import registry

ROOT = Path(__file__).parent.parent / "pinbench"

ALLOWED_FOLDERS = {
    "tasks": "the tasks themselves",
    "catalog": "the built-in catalog: content (its datasets' tasks), not core",
    "registry/mlmodelscope": "MLModelScope's own task names, converted: content, not core",
}
ALLOWED: dict[tuple[str, str], str] = {
    # (file under pinbench/, name): why it may name it
    ("trace/ops.py", "other"): "an operator category, not the task",
    ("worker/generation/chat_template.py", "map"): "a Jinja filter a chat template may use, "
    "not the detection metric",
    ("cli/bisect.py", "top1"): "the CLI contract's earlier name of --metric accuracy",
    # the output types a model manifest declares are spelled as the tasks that read them
    # (decision 124: the output sections are still declared in registry/ports.py)
    ("registry/ports.py", "classification"): "an output type",
    ("registry/ports.py", "detection"): "an output type and its section",
    ("registry/ports.py", "segmentation"): "an output type and its section",
    ("registry/dataset_manifest.py", "classification"): "a dataset's default task",
    ("registry/late_fields.py", "detection"): "an output's section, a late field",
    ("registry/late_fields.py", "segmentation"): "an output's section, a late field",
    ("registry/supported.py", "classification"): "an output type",
    ("registry/supported.py", "detection"): "an output type and its section",
    ("registry/supported.py", "segmentation"): "an output type and its section",
    ("registry/output_steps.py", "classification"): "an output type and the steps it takes",
    ("registry/output_steps.py", "detection"): "an output type (it takes no step)",
    ("registry/output_steps.py", "segmentation"): "an output type (it takes no step)",
    ("worker/trainrun.py", "classification"): "the output type a trained classifier has",
    ("registry/schema_docs_ports.py", "detection"): "the output section's field name",
    ("registry/schema_docs_ports.py", "segmentation"): "the output section's field name",
    ("authoring/model.py", "classification"): "`manifest model --classification` marks the type",
    ("authoring/hf_model.py", "classification"): "the output type a classifier head is written as",
    ("authoring/hf_heads.py", "classification"): "the output type of an audio classifier",
    ("authoring/hf_heads.py", "token-classification"): "the task a *ForTokenClassification head's "
    "manifest names (attributes.task): transformers' head, read as what it is",
    ("authoring/hf_model.py", "token-classification"): "the head's task, as hf_heads.py names it",
    ("authoring/hf_heads.py", "question-answering"): "the task a *ForQuestionAnswering head's "
    "manifest names (attributes.task): transformers' head, read as what it is",
    ("cli/manifest.py", "classification"): "the --classification option's parameter name",
    # a migration is frozen: it names the rows it renames as they were recorded (decision 161)
    ("migrations/versions/0015_rouge_unstemmed.py", "rouge1"): "the metric it renames",
    ("migrations/versions/0015_rouge_unstemmed.py", "rouge2"): "the metric it renames",
    ("migrations/versions/0015_rouge_unstemmed.py", "rouge_l"): "the metric it renames",
}


def names() -> set[str]:
    found = set()
    for task in registry.tasks():
        found.add(task.name)
        found.update(m.name for m in task.metrics)
    return found


def _python(path: Path) -> set[str]:
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
WORD = re.compile(r"[\"']([a-z0-9_-]+)[\"']|\.([a-z0-9_]+)\b")


def _template(path: Path) -> set[str]:
    return {a or b for block in JINJA.findall(path.read_text()) for a, b in WORD.findall(block)}


def test_no_task_or_metric_name_outside_the_task_folders() -> None:
    wanted = names()
    found = []
    for path in sorted([*ROOT.rglob("*.py"), *ROOT.rglob("*.j2")]):
        where = path.relative_to(ROOT).as_posix()
        if any(where.startswith(folder + "/") for folder in ALLOWED_FOLDERS):
            continue
        strings = _python(path) if path.suffix == ".py" else _template(path)
        found += [f"{where}: {name!r}" for name in sorted(strings & wanted - {""})]
    allowed = {f"{where}: {name!r}" for where, name in ALLOWED}
    assert sorted(set(found) - allowed) == [], "ask pinbench.tasks.registry instead"
    assert sorted(allowed - set(found)) == [], "no longer needed: remove it from ALLOWED"

"""A study's cells run a model's processing code only with the operator's consent (issue 74):
``study run --allow-code`` (and ``study rerun --allow-code``) hand it to every cell's run, as
``run --allow-code`` does; a study file cannot grant it, and without it the cell is refused,
saying what to give. The model is the catalog's ``magika`` part (its features as pinned code).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from pinbench.catalog import magika
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.workspace import Workspace
from tests.helpers import Cli
from tests.test_study import cli_on  # noqa: F401  (the fixture)


def test_a_cell_runs_processing_code_only_with_allow_code(
    cli_on: Cli,  # noqa: F811
    digits: Workspace,
    tmp_path: Path,
) -> None:
    for manifest in (*magika.write_datasets(tmp_path), *magika.export(tmp_path)):
        publish(digits, load_manifest(manifest), manifest_dir=tmp_path, publisher="test")
    study = {
        "name": "coded",
        "models": [
            {
                "model": f"{magika.NAME}@1",
                "framework": "onnxruntime@*",
                "dataset": f"{magika.DATASET}@1",
            }
        ],
        "scenarios": {"accuracy": {"name": "SingleStream", "mode": "accuracy"}},
        "systems": [{"name": "here", "threads": 1}],
    }
    path = tmp_path / "coded.yaml"
    path.write_text(yaml.safe_dump(study))

    refused = cli_on("study", "run", str(path))
    assert refused.code == 1
    (cell,) = json.loads(cli_on("study", "show", "coded", "--json").out)["cells"]
    assert cell["state"] == "refused" and "--allow-code" in cell["reason"], cell
    assert cell["run"] is None  # refused before anything ran or was recorded
    assert json.loads(cli_on("runs", "list", "--json", "--model", magika.NAME).out) == []

    ran = cli_on("study", "run", str(path), "--allow-code")
    assert ran.code == 0, ran.err
    (cell,) = json.loads(cli_on("study", "show", "coded", "--json").out)["cells"]
    assert cell["state"] == "done" and cell["accuracy_metric"] == "top1"

    assert cli_on("study", "rerun", "coded", "--repeat", "1").code == 1  # no consent: failed
    again = cli_on("study", "rerun", "coded", "--repeat", "1", "--allow-code")
    assert again.code == 0, again.out + again.err

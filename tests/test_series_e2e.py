"""End to end: two real versions of one model, the second slower by construction (the same
graph plus a costly chain whose result is added times zero), run for real; the docs' GitHub
Actions recipe (docs/continuous.md) gates the slow one through the CLI and fails the job."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

import pinbench
from pinbench.config import Settings
from pinbench.registry.manifest import load_manifest
from pinbench.registry.publish import publish
from pinbench.workspace import Workspace
from tests.slow_onnx import slow_copy

DOCS = Path(__file__).parents[1] / "docs" / "continuous.md"
SCENARIO = {"name": "SingleStream", "min_duration_ms": 300, "min_query_count": 150}
SERIES = "vision/digits-logreg:sklearn-digits-test:SingleStream:performance:b1:-"


def recipe_steps() -> list[dict[str, Any]]:
    """The workflow's steps, from the YAML block after ``<!-- ci recipe -->``."""
    found = re.search(r"<!-- ci recipe -->\n```yaml\n(.*?)```", DOCS.read_text(), re.S)
    assert found, "docs/continuous.md has no CI recipe"
    workflow = yaml.safe_load(found.group(1))
    steps: list[dict[str, Any]] = workflow["jobs"]["gate"]["steps"]
    return steps


def _publish_slow(ws: Workspace, catalog: Path, root: Path) -> None:
    data = yaml.safe_load((catalog / "model-digits-logreg-1.2.0.yaml").read_text())
    folder = root / "slow"
    folder.mkdir()
    slow_copy(catalog / "digits-logreg-1.2.0" / "digits-logreg.onnx", folder / "m.onnx")
    body = (folder / "m.onnx").read_bytes()
    import hashlib

    data["version"] = "3.0.0"
    data["files"] = [
        {
            "path": "digits-logreg.onnx",
            "sha256": hashlib.sha256(body).hexdigest(),
            "size": len(body),
            "source": "file:m.onnx",
        }
    ]
    (folder / "model.yaml").write_text(yaml.safe_dump(data))
    publish(ws, load_manifest(folder / "model.yaml"), manifest_dir=folder, publisher="test")


def test_the_ci_recipe_fails_a_model_made_slower(tmp_path: Path, catalog_dir: Path) -> None:
    home = tmp_path / "home"
    ws = Workspace(Settings(home=home, database_url=f"sqlite:///{home / 'pinbench.db'}"))
    ws.init()
    for path in sorted(catalog_dir.glob("*.yaml")):
        publish(ws, load_manifest(path), manifest_dir=catalog_dir, publisher="test")
    _publish_slow(ws, catalog_dir, tmp_path)
    ws.close()
    request = {"dataset": "sklearn-digits-test@^1", "framework": "onnxruntime@*"}
    (tmp_path / "benchmarks").mkdir()
    for name, version in (("baseline", "1.2.0"), ("candidate", "3.0.0")):
        body = {**request, "model": f"vision/digits-logreg@{version}", "scenario": SCENARIO}
        (tmp_path / "benchmarks" / f"{name}.yaml").write_text(yaml.safe_dump(body))
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PINBENCH_HOME": str(home),
        "PINBENCH_RUNNER": "local",
        "PINBENCH_GATE_REPEAT": "2",  # the recipe's 3, less one run of the slow model
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    for name in ("PINBENCH_URL", "PINBENCH_DATABASE_URL", "PINBENCH_TOKEN"):
        env.pop(name, None)
    # the series' history: the fast version run three times, then its threshold: a relative
    # bound (a statistical test over three noisy runs on a shared machine is inconclusive by
    # design: the window's run-to-run interval at 99 % is wide)
    with pinbench.Registry(home=home) as registry:
        (baseline,) = registry.lock(tmp_path / "benchmarks" / "baseline.yaml")
        for _ in range(3):
            baseline.run(runner="local")
        registry.series().set_threshold(
            SERIES, "framework_latency_p50_ns", test="relative", max_change=0.5
        )

    steps = [s for s in recipe_steps() if "run" in s and s.get("name") != "Install pinbench"]
    assert [s["name"] for s in steps] == ["Lock the candidate", "Gate it against its series"]
    lock = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", steps[0]["run"]], cwd=tmp_path, env=env, text=True
    )
    assert lock.returncode == 0
    gate = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", steps[1]["run"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert gate.returncode == 1, gate.stdout + gate.stderr  # the job fails
    assert "::error::the candidate regressed" in gate.stdout
    info = json.loads((tmp_path / "gate.json").read_text())
    (judged,) = info["comparisons"]
    assert info["outcome"] == "regressed" and len(info["history"]) == 3
    assert len(info["runs"]) == len(set(info["runs"])) == 2  # --repeat: both runs judged
    assert len(judged["candidates"]) == 2 and info["run"] == info["runs"][-1]
    assert judged["test"] == "relative" and judged["threshold"]["version"] == 1
    assert judged["change"] > 0.5  # a costly chain: far slower, not a little
    summary = (tmp_path / "summary.md").read_text()
    assert "### ❌ pinbench gate: regressed" in summary
    shutil.rmtree(home / "tmp", ignore_errors=True)

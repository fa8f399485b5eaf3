"""Schemathesis against the live OpenAPI schema of a real server: generated requests (as an
admin, the widest rights) must never get a 5xx, and the server logs no unexpected error. The
hooks in tests/fuzz_hooks.py give the upload route its multipart body, with the hostile YAML
manifests of tests/hostile_yaml.py as explicit examples."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx

from tests.apiserver import api_server
from tests.hostile_yaml import MODEL_NAME

ROOT = Path(__file__).resolve().parent.parent


def test_no_5xx_for_generated_requests(tmp_path: Path, catalog_dir: Path) -> None:
    st = shutil.which("st", path=str(Path(sys.executable).parent))
    assert st, "schemathesis is part of the dev extra (pip install -e '.[dev]')"
    with api_server(tmp_path / "home", f"sqlite:///{tmp_path}/db", catalog_dir=catalog_dir) as s:
        result = subprocess.run(
            [
                st, "run", f"{s.url}/schema/openapi.json",
                "--checks", "not_a_server_error",
                "--max-examples", "40",
                "--seed", "20261121",
                "--header", f"Authorization: Bearer {s.tokens['admin']}",
                "--no-color",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,  # schemathesis keeps a cache folder where it runs
            env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.fuzz_hooks", "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        log = (s.home / "serve.log").read_text()
        paths = httpx.get(f"{s.url}/schema/openapi.json").json()["paths"]
        auth = {"Authorization": f"Bearer {s.tokens['admin']}"}
        hostile = httpx.get(f"{s.url}/api/v1/artifacts", params={"name": MODEL_NAME}, headers=auth)
    report = result.stdout[-4000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    operations = sum(len(ops) for ops in paths.values())  # /api/v1/... and /metrics
    assert f"Tested: {operations}" in result.stdout, report  # every operation, none skipped
    assert "unexpected error" not in log and "Traceback" not in log, log[-4000:]
    assert hostile.json() == [], "no hostile manifest was published"

"""Docs kept true by tests: the README's set-up commands, the JSON Schemas, the examples."""

from __future__ import annotations

import json
from pathlib import Path

from pinbench.registry.manifest import json_schemas
from tests.helpers import Cli

ROOT = Path(__file__).parent.parent


def test_readme_opens_with_the_two_setup_commands() -> None:
    first_block = ROOT.joinpath("README.md").read_text().split("```")[1]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()[1:] if line]
    assert commands == ["make demo", "make test"]


def test_ci_runs_the_readme_test_command() -> None:
    assert "make test" in ROOT.joinpath(".ci/run").read_text()


def test_committed_json_schemas_match_the_code() -> None:
    for kind, schema in json_schemas().items():
        committed = json.loads((ROOT / "docs" / "schemas" / f"{kind}.schema.json").read_text())
        assert committed == schema, f"regenerate with `pinbench schema docs/schemas` ({kind})"


def test_readme_range_example(cli: Cli) -> None:
    result = cli("range", ">=1.2 <2 || 3.x", "1.1.0", "1.4.2", "3.0.1")
    assert result.out.split() == ["1.4.2", "3.0.1"]

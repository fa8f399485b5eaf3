"""Docs kept true by tests: the README's set-up commands, the JSON Schemas, the examples."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from pinbench.registry import manifest, manifest_parts
from pinbench.registry.manifest import json_schemas
from pinbench.registry.schema_docs import FIELD_DOCS, STRUCT_DOCS, describe, undescribed
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
        assert committed == schema, (
            f"regenerate with `pinbench schema --force docs/schemas` ({kind})"
        )


def test_every_struct_and_field_of_every_schema_is_described() -> None:
    for kind, schema in json_schemas().items():
        assert undescribed(schema) == [], kind
        fields = schema["$defs"][schema["$ref"].rsplit("/", 1)[-1]]["properties"]
        assert len(fields) > 5 and all(p["description"].strip() for p in fields.values()), kind


def test_no_description_names_a_struct_or_field_that_does_not_exist() -> None:
    defs: dict[str, set[str]] = {}
    for schema in json_schemas().values():
        for name, definition in schema["$defs"].items():
            defs[name] = set(definition["properties"])
    assert {n: sorted(set(f) - defs.get(n, set())) for n, f in FIELD_DOCS.items()} == {
        n: [] for n in FIELD_DOCS
    }
    assert set(STRUCT_DOCS) <= set(defs)


_NEW = msgspec.defstruct(
    "FileEntry", [("mirror", str | None, None)], bases=(manifest_parts.FileEntry,), kw_only=True
)


@pytest.mark.parametrize(
    ("struct", "missing"),
    [
        # the real FileEntry plus one field: only the new field is undescribed
        (_NEW, ["FileEntry.mirror"]),
        # a struct nobody described: the struct (no docstring) and each field
        (
            msgspec.defstruct("Unheard", [("a", int), ("b", str)], kw_only=True),
            ["Unheard", "Unheard.a", "Unheard.b"],
        ),
        # described as they are
        (manifest_parts.FileEntry, []),
        (manifest.ModelManifest, []),
    ],
)
def test_a_field_added_without_a_description_is_reported(
    struct: type[msgspec.Struct], missing: list[str]
) -> None:
    assert undescribed(describe(msgspec.json.schema(struct))) == missing


def test_readme_range_example(cli: Cli) -> None:
    result = cli("range", ">=1.2 <2 || 3.x", "1.1.0", "1.4.2", "3.0.1")
    assert result.out.split() == ["1.4.2", "3.0.1"]

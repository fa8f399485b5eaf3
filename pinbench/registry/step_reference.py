"""``docs/steps.md``: every input and output step of a model manifest, with its parameters, written
from the model manifest's JSON Schema (the same descriptions ``pinbench schema`` writes), so the
page cannot drift from the code (``tests/test_docs_site.py`` compares them).

Regenerate: ``.venv/bin/python -m pinbench.registry.step_reference > docs/steps.md``.
"""

from __future__ import annotations

import json
from typing import Any

HEADER = """# Steps

Every step a model manifest's `inputs[].steps` and `outputs[].steps` may hold, in the order
the schema lists them, with each parameter's type, default and meaning. A step is one key in a
list item, e.g. `- resize: {size: [224, 224]}`; the steps of an input run in the order written
(see [Authoring manifests](authoring.md) for a walkthrough). This page is generated from the
manifest's JSON Schema (`pinbench schema DIR` writes it for editors).

Output steps are applied by the task that reads the output, or refused at publish naming the
step and the task (never accepted and ignored; decision 170): a `classification` output takes
`softmax` (along its class axis), `argsort` and `topk`, the last two as its last step; an
`embedding` output takes every step, applied in order; the other output types take none.
"""


def _type(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return " or ".join(f"`{json.dumps(v)}`" for v in spec["enum"])
    if "$ref" in spec:
        return f"object ({spec['$ref'].rsplit('/', 1)[-1]})"
    if "anyOf" in spec:
        return " or ".join(_type(s) for s in spec["anyOf"] if s.get("type") != "null")
    kind = spec.get("type", "any")
    if kind == "array":
        items = spec.get("prefixItems")
        if items:
            return f"[{', '.join(_type(i) for i in items)}]"
        inner = spec.get("items")
        return f"list of {_type(inner)}" if isinstance(inner, dict) else "list"
    bounds = [
        f"{op} {spec[k]}"
        for k, op in (("minimum", "≥"), ("maximum", "≤"), ("minLength", "length ≥"))
        if k in spec
    ]
    return f"{kind} ({', '.join(bounds)})" if bounds else str(kind)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _params(defs: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    ref = next((s["$ref"] for s in spec.get("anyOf", [spec]) if "$ref" in s), None)
    if ref is None:
        return [f"Value: {_type(spec)}.", ""]
    target = defs[ref.rsplit("/", 1)[-1]]
    if target.get("type") != "object":
        return [f"Value: {_type(target)}. {_cell(target.get('description', ''))}", ""]
    required = set(target.get("required", []))
    lines = ["| parameter | type | default | meaning |", "|---|---|---|---|"]
    for name, prop in target.get("properties", {}).items():
        default = "required" if name in required else f"`{json.dumps(prop.get('default'))}`"
        lines.append(
            f"| `{name}` | {_cell(_type(prop))} | {default} | "
            f"{_cell(prop.get('description', ''))} |"
        )
    return [*lines, ""]


def _steps(defs: dict[str, Any], struct: str, title: str) -> list[str]:
    lines = [f"## {title}", ""]
    for name, spec in defs[struct]["properties"].items():
        lines += [f"### `{name}`", "", _cell(spec.get("description", "")), ""]
        lines += _params(defs, spec)
    return lines


def markdown() -> str:
    """The page."""
    from pinbench.registry.manifest import json_schemas

    defs = json_schemas()["model"]["$defs"]
    lines = [HEADER]
    lines += _steps(defs, "InputStep", "Input steps")
    lines += _steps(defs, "OutputStep", "Output steps")
    lines += ["## Output sections", ""]
    output = defs["Output"]["properties"]
    for name in sorted(output):
        spec = output[name]
        if not any("$ref" in s for s in spec.get("anyOf", [spec])):
            continue
        lines += [f"### `{name}`", "", _cell(spec.get("description", "")), ""]
        lines += _params(defs, spec)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(markdown())

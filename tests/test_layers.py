"""The layers hold: a module imports only from its own layer or the layers below it (imports
inside functions and under ``TYPE_CHECKING`` count too), nothing below the faces imports the
built-in catalog, module-level imports make no circle, and no module is over 400 lines.

Today's exceptions are listed below, each with its reason: the test fails on any new one, and
on an exception that no longer happens (so the list only shrinks). docs/architecture.md
explains the layers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pinbench"

# Lowest first. A unit is a top-level package or module of pinbench.
LAYERS: list[tuple[str, set[str]]] = [
    ("base", {"errors", "bounds", "config", "quiet", "hardware"}),
    ("storage", {"artifacts", "db", "migrations", "workspace"}),
    ("registry", {"registry", "accounts"}),
    (
        "evaluator",
        {
            "tasks",
            "evaluator",
            "operators",
            "training",
            "trace",
            "energy",
            "environments",
            "images",
            "run_metrics",
        },
    ),
    ("runs", {"provenance", "reports"}),
    ("cluster", {"cluster", "remote"}),
    ("sdk", {"sdk"}),
    (
        "faces",
        {
            "cli",
            "api",
            "web",
            "demo",
            "catalog",
            "benchmark",
            "authoring",
            "tables",
            "console",
            "entry",
            "__main__",
        },
    ),
]
LEVEL = {unit: n for n, (_, units) in enumerate(LAYERS) for unit in units}

# (importing module, imported unit): why it may go up, for now.
UPWARD = {
    ("pinbench.registry.dataset_files", "tasks"): "publish asks a dataset's task to check its "
    "ground truth (decision 124): tasks are plug-ins the registry consults",
    ("pinbench.registry.dataset_files", "evaluator"): "publish reads a dataset's samples as a "
    "run would, to check them",
    ("pinbench.registry.dataset_manifest", "tasks"): "a dataset manifest's task is asked to "
    "check its labels",
    ("pinbench.registry.supported", "tasks"): "what a model's outputs can be scored by is the "
    "task's to say",
    ("pinbench.registry.lockfile", "tasks"): "a lockfile's dataset task is checked as the "
    "manifest's is",
    ("pinbench.registry.lockfile", "operators"): "a lockfile embeds an operator benchmark's "
    "spec (data only)",
    ("pinbench.registry.lockfile", "training"): "a lockfile embeds a training spec (data only)",
    ("pinbench.registry.request", "operators"): "a request names an operator benchmark's spec",
    ("pinbench.registry.request", "training"): "a request names a training spec",
    ("pinbench.registry.request", "cluster"): "a request's placement uses the cluster's "
    "system names",
    ("pinbench.registry.supported", "evaluator"): "which input steps a model may declare is "
    "the evaluator's pipeline's to say",
    ("pinbench.registry.formats", "tasks"): "a text output's CTC alphabet is read and checked "
    "as the text-recognition task reads it",
    ("pinbench.evaluator.run", "cluster"): "a run on an agent records the system it ran on",
    ("pinbench.evaluator.run", "provenance"): "a run is attested when it is recorded",
    ("pinbench.reports.data", "cluster"): "a report names the system of each run",
    ("pinbench.provenance.blobs", "remote"): "attest verify reads blobs from a server",
}


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


MODULES = dict(_modules())


def _unit(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def _imports(path: Path, *, top_only: bool) -> set[str]:
    """pinbench modules ``path`` imports (``top_only``: at module level, outside
    ``if TYPE_CHECKING``), as the longest module name each import names."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name.startswith("pinbench."):
                found.add(name)
    return found


def test_every_unit_of_the_package_has_a_layer() -> None:
    units = {_unit(m) for m in MODULES if m != "pinbench"}
    assert units - set(LEVEL) == set()


def test_imports_go_down_the_layers() -> None:
    upward = {}
    for module, path in MODULES.items():
        if module == "pinbench":
            continue
        mine = LEVEL[_unit(module)]
        for target in _imports(path, top_only=False):
            unit = _unit(target)
            if LEVEL[unit] > mine:
                upward[(module, unit)] = f"{LAYERS[mine][0]} -> {LAYERS[LEVEL[unit]][0]}"
    assert sorted(set(upward) - set(UPWARD)) == [], "new imports up the layers"
    assert sorted(set(UPWARD) - set(upward)) == [], "gone: take them off UPWARD"


def test_nothing_below_the_faces_imports_the_built_in_catalog() -> None:
    faces = LEVEL["cli"]
    below = [
        module
        for module, path in MODULES.items()
        if module != "pinbench" and LEVEL[_unit(module)] < faces
        if any(_unit(t) == "catalog" for t in _imports(path, top_only=False))
    ]
    assert below == []


def _ancestors(module: str) -> set[str]:
    """A module's packages: importing one of them from inside is no circle (Python runs a
    package's ``__init__`` before any module in it)."""
    parts = module.split(".")
    return {".".join(parts[:n]) for n in range(1, len(parts) + 1)}


def test_module_level_imports_make_no_circle() -> None:
    graph = {m: _imports(p, top_only=True) - _ancestors(m) for m, p in MODULES.items()}
    state: dict[str, int] = {}

    def visit(module: str, trail: list[str]) -> list[str] | None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                return [*trail, module, target]
            if target not in state and (found := visit(target, [*trail, module])):
                return found
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            assert visit(module, []) is None


# Modules allowed over 400 lines: none (it was 11 when the test came; keep it empty).
LONG: set[str] = set()


def test_no_module_is_over_400_lines() -> None:
    long = {m for m, p in MODULES.items() if len(p.read_text().splitlines()) > 400}
    assert sorted(long - LONG) == [], "split it"
    assert sorted(LONG - long) == [], "take it off LONG"

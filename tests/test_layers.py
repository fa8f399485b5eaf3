"""The layers hold: a module imports only from its own layer or the layers below it (imports
inside functions and under ``TYPE_CHECKING`` count too), nothing below the faces imports the
built-in catalog, no import that runs makes a circle (at module level or in a function), and
no module is over 400 lines.

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
    (
        "base",
        {
            "errors",
            "bounds",
            "config",
            "quiet",
            "hardware",
            "retrying",
            "polling",
            "tls",
            "typed",
            "shown",
            "libc",
            "programs",
        },
    ),
    ("specs", {"specs"}),
    ("storage", {"artifacts", "db", "migrations", "workspace"}),
    ("registry", {"registry", "accounts", "api_tokens", "users"}),
    (
        "evaluator",
        {
            "tasks",
            "processing",
            "chains",
            "evaluator",
            "worker",
            "operators",
            "training",
            "transforms",
            "trace",
            "energy",
            "environments",
            "images",
            "run_metrics",
            "run_figures",
            "run_samples",
            "metric_names",
        },
    ),
    ("runs", {"provenance", "reports", "series", "studies", "doctor"}),
    ("cluster", {"cluster", "remote", "remote_errors"}),
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
    ("pinbench.evaluator.run", "cluster"): "a run on an agent records the system it ran on",
    ("pinbench.evaluator.run", "provenance"): "a run is attested when it is recorded",
    ("pinbench.reports.data", "cluster"): "a report names the system of each run",
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


def _imports(path: Path, *, top_only: bool, annotations: bool = True) -> set[str]:
    """pinbench modules ``path`` imports (``top_only``: at module level, outside
    ``if TYPE_CHECKING``; ``annotations``: those under ``if TYPE_CHECKING`` too), as the
    longest module name each import names."""
    tree = ast.parse(path.read_text())

    def walk(node: ast.AST) -> Iterator[ast.AST]:
        for child in ast.iter_child_nodes(node):
            if not annotations and _for_annotations(child):
                continue
            yield child
            yield from walk(child)

    nodes = tree.body if top_only else list(walk(tree))
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


def _for_annotations(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"


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


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The circles of ``graph``: its strongly connected parts of more than one module
    (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.add(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(frozenset(part))
    return found


def _graph(*, annotations: bool) -> dict[str, set[str]]:
    return {
        m: _imports(p, top_only=False, annotations=annotations) - _ancestors(m)
        for m, p in MODULES.items()
    }


def test_circles_are_found_wherever_they_close() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert sorted(map(sorted, circles(graph))) == [["a", "b", "c"], ["d", "e"]]


def test_imports_that_run_make_no_circle() -> None:
    """Issue 75: following every import that runs, at module level or inside a function, no
    module reaches itself again (there were 13 circles, the largest of 13 files: the registry,
    the tasks and the evaluator's datasets)."""
    assert circles(_graph(annotations=False)) == []


# Circles closed only by imports for annotations (``if TYPE_CHECKING``): each with its reason.
# At most 4 (issue 75); the test fails on a new one and on one that is gone.
ANNOTATION_CIRCLES = {
    frozenset({"pinbench.registry.input_kinds", "pinbench.registry.ports"}): "an input's "
    "kind is checked as the input is decoded; the checks take the input's type",
    frozenset({"pinbench.studies.cells", "pinbench.studies.spec"}): "a study is checked by "
    "expanding its cells; a cell names its study's entries",
    frozenset({"pinbench.tasks.detection.decoding", "pinbench.tasks.detection.score"}): "the "
    "scorer's plan is decoded by the decoders it calls",
    frozenset(
        {
            "pinbench.sdk.registry",
            *(
                f"pinbench.sdk.{m}"
                for m in [
                    "accounts",
                    "admin",
                    "hosting",
                    "images",
                    "inquiries",
                    "placement",
                    "run_records",
                    "runs",
                    "series",
                    "studies",
                ]
            ),
        }
    ): "the Python API's Registry is made of one mixin per subject; each names the Registry "
    "as its self's type",
}


def test_circles_through_annotations_are_the_known_ones() -> None:
    found = set(circles(_graph(annotations=True)))
    assert len(ANNOTATION_CIRCLES) <= 4
    assert sorted(map(sorted, found - set(ANNOTATION_CIRCLES))) == [], "new circle"
    assert sorted(map(sorted, set(ANNOTATION_CIRCLES) - found)) == [], "gone: take it off"


# Modules allowed over 400 lines: none (it was 11 when the test came; keep it empty).
LONG: set[str] = set()


def test_no_module_is_over_400_lines() -> None:
    long = {m for m, p in MODULES.items() if len(p.read_text().splitlines()) > 400}
    assert sorted(long - LONG) == [], "split it"
    assert sorted(LONG - long) == [], "take it off LONG"


# -- the faces stand on the Python API ---------------------------------------------------------

FACES = ("pinbench.cli", "pinbench.api.controllers", "pinbench.demo")
"""The CLI, the REST controllers and the demo: they call ``pinbench.sdk`` (the Python API)."""
FACE_MAY_IMPORT = (
    "pinbench.sdk",  # the API, its value types and errors
    "pinbench.console",  # printing
    "pinbench.tables",  # tables of what the API answered
    "pinbench.errors",  # UserError and friends, to raise and catch
    "pinbench.cli",  # the faces themselves (and the layer's other faces: the catalog's
    "pinbench.demo",  # builder, the benchmark's jobs, manifest authoring)
    "pinbench.catalog",
    "pinbench.benchmark",
    "pinbench.authoring",
)
REST_MAY_IMPORT = (
    "pinbench.api",  # the server's own machinery: its schemas, problems, run queue, cache
    "pinbench.accounts",  # the caller the server authenticated (Principal) and its refusals
)
PURE_VIEW = "a pure view of data the API answered (no store, no database)"
REQUEST_BUILDER = "pure: builds the request document the API locks"
COMPOSITION = "a composition root: assembles a process (the server or an agent), not a call"
# (face module, module beneath the API it imports at run time): why, for now.
BENEATH_API = {
    ("pinbench.cli.run_view", "pinbench.run_samples"): PURE_VIEW,
    ("pinbench.cli.run_view", "pinbench.metric_names"): PURE_VIEW,
    ("pinbench.cli.study", "pinbench.studies.analyses"): PURE_VIEW,
    ("pinbench.cli.study", "pinbench.studies.figures"): PURE_VIEW,
    ("pinbench.cli.run_view", "pinbench.run_figures"): PURE_VIEW,
    ("pinbench.cli.run_view", "pinbench.run_metrics"): PURE_VIEW,
    ("pinbench.cli.series", "pinbench.run_figures"): PURE_VIEW,
    ("pinbench.cli.runs", "pinbench.run_figures"): PURE_VIEW,
    ("pinbench.cli.runs", "pinbench.run_metrics"): PURE_VIEW,
    ("pinbench.cli.run_trace", "pinbench.trace.analysis"): PURE_VIEW,
    ("pinbench.demo.flow", "pinbench.run_samples"): PURE_VIEW,
    ("pinbench.demo.flow", "pinbench.trace.analysis"): PURE_VIEW,
    ("pinbench.demo.transforms", "pinbench.reports.transforms"): PURE_VIEW,
    ("pinbench.cli.ops", "pinbench.operators.resnet50"): REQUEST_BUILDER,
    ("pinbench.cli.ops", "pinbench.specs.operators.schema"): REQUEST_BUILDER,
    ("pinbench.cli.ops", "pinbench.specs.operators.section"): REQUEST_BUILDER,
    ("pinbench.cli.ops", "pinbench.operators.shape_text"): REQUEST_BUILDER,
    ("pinbench.cli.mlmodelscope", "pinbench.registry.mlmodelscope"): "pure: converts one "
    "MLModelScope manifest file to a pinbench manifest's text (authoring, no registry)",
    ("pinbench.cli.registry", "pinbench.registry.scenario_notes"): "pure: what the locked "
    "scenario's settings make LoadGen call INVALID, read from the lockfile the API returned",
    ("pinbench.cli.serve", "pinbench.api"): COMPOSITION,
    ("pinbench.cli.serve", "pinbench.api.agent_wait"): COMPOSITION,
    ("pinbench.cli.serve", "pinbench.api.app"): COMPOSITION,
    ("pinbench.cli.serve", "pinbench.api.outage"): COMPOSITION,
    ("pinbench.cli.serve", "pinbench.api.server"): COMPOSITION,
    ("pinbench.cli.serve", "pinbench.api.supervisor"): COMPOSITION,
    ("pinbench.cli.serve", "pinbench.api.worker_metrics"): COMPOSITION,
    ("pinbench.cli.serve", "pinbench.bounds"): "the bounds of serve's own numbers "
    "(--runs-per-user, --drain-seconds, --auth-failures, --ready-min-free-mb), refused before "
    "the server starts",
    ("pinbench.cli.serve", "pinbench.energy.price"): COMPOSITION,
    ("pinbench.cli.serve", "pinbench.evaluator.instances"): COMPOSITION,
    ("pinbench.cli.serve", "pinbench.evaluator.runners"): COMPOSITION,
    ("pinbench.cli.cluster", "pinbench.cluster.facts"): COMPOSITION,
    ("pinbench.cli.cluster", "pinbench.cluster.ray_agent"): COMPOSITION,
    ("pinbench.cli.cluster", "pinbench.config"): COMPOSITION,
    ("pinbench.cli.cluster", "pinbench.energy.price"): COMPOSITION,
}


def _run_time_imports(path: Path) -> set[str]:
    """The pinbench modules ``path`` imports when it runs: at module level or in functions,
    not under ``if TYPE_CHECKING`` (annotations name what they like)."""

    def walk(node: ast.AST) -> Iterator[ast.AST]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test) == "TYPE_CHECKING":
                continue
            yield child
            yield from walk(child)

    found: set[str] = set()
    for node in walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("pinbench")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "pinbench":
                found |= {f"pinbench.{a.name}" for a in node.names}
            elif node.module.startswith("pinbench."):
                found.add(node.module)
    return found


def test_the_cli_the_rest_controllers_and_the_demo_call_only_the_api() -> None:
    beneath = set()
    for module, path in MODULES.items():
        if not module.startswith(FACES):
            continue
        allowed: tuple[str, ...] = FACE_MAY_IMPORT
        if module.startswith("pinbench.api.controllers"):
            allowed += REST_MAY_IMPORT
        beneath |= {(module, t) for t in _run_time_imports(path) if not t.startswith(allowed)}
    assert sorted(beneath - set(BENEATH_API)) == [], "call pinbench.sdk instead"
    assert sorted(set(BENEATH_API) - beneath) == [], "gone: take them off BENEATH_API"


def test_a_face_that_imports_beneath_the_api_is_caught(tmp_path: Path) -> None:
    """The check above reads real imports: one in a function counts, one for annotations
    does not."""
    face = tmp_path / "face.py"
    face.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pinbench.workspace import Workspace\n"
        "def f():\n    from pinbench.registry import catalog\n    import pinbench.db\n"
    )
    assert _run_time_imports(face) == {"pinbench.registry", "pinbench.db"}


SYSTEM_UNDER_TEST = "pinbench.worker.main"
"""The evaluator process: it runs the model and the code a user allowed beside it."""
HOST_ONLY = (
    "pinbench.db",
    "pinbench.workspace",
    "pinbench.evaluator.scoring",
    "pinbench.evaluator.run",
    "pinbench.evaluator.records.recording",
    "pinbench.provenance",
    "pinbench.evaluator.runners",
)
"""What judges, times and records a run: the runners (among them the host's clock and its
audits, ``runners.host_clock``), the database, the scorer that holds the ground truth, the
recorder, the signed provenance (issue 63, issue 71; docs/architecture.md)."""


def _reached(roots: set[str]) -> dict[str, str]:
    """Every module ``roots`` import, following every import (in functions and for
    annotations too), with the module that first imported it."""
    seen, todo, by = set(roots), list(roots), {}
    while todo:
        module = todo.pop()
        for target in _imports(MODULES[module], top_only=False):
            if target not in seen:
                seen.add(target)
                by[target] = module
                todo.append(target)
    return by | {r: "" for r in roots}


def _trail(by: dict[str, str], module: str) -> str:
    """How ``module`` was reached: it, the module that imported it, ... back to a root."""
    path, at = [module], module
    while by.get(at):
        at = by[at]
        path.append(at)
    return " <- ".join(path)


def test_the_evaluator_imports_nothing_that_scores_or_records() -> None:
    """MLPerf keeps the system under test apart from its accuracy script: everything the
    evaluator process can import (following every import, in functions too) is on the side
    that runs beside the model; the host's scoring and recording, and the database, are not."""
    by = _reached({SYSTEM_UNDER_TEST})
    host = [m for m in by if any(m == h or m.startswith(h + ".") for h in HOST_ONLY)]
    assert {m: _trail(by, m) for m in host} == {}


def test_the_workers_side_is_its_package_and_the_libraries_copied_with_it() -> None:
    """Issue 71, item 6: what a worker imports — from every module of ``pinbench.worker`` (its
    entry, the predictors and children it starts by name), the tasks it asks for by name and
    the registry's checks — is exactly ``pinbench.worker`` and the units
    ``worker.source.LIBRARIES`` names, which are what is copied into a sandbox or an image;
    each of those units is used."""
    from pinbench.registry.checks import PROVIDER
    from pinbench.tasks.registry import TASKS
    from pinbench.worker.source import LIBRARIES

    roots = {m for m in MODULES if m.startswith("pinbench.worker")} | {PROVIDER}
    roots |= {where.partition(":")[0] for where in TASKS.values()}
    by = _reached(roots)
    outside = [m for m in by if _unit(m) not in ("worker", *LIBRARIES) and m != "pinbench"]
    assert {m: _trail(by, m) for m in outside} == {}
    assert sorted(set(LIBRARIES) - {_unit(m) for m in by}) == [], "unused: take it off"

"""What a command imports: the CLI's start-up is the libraries it loads, so each command is run in
a fresh interpreter and the modules it left in ``sys.modules`` are checked (never its time).

``--help``, ``--version``, ``range`` and ``digest`` load neither SQLAlchemy nor NumPy; a read
command (``list``, ``show``, ``resolve``) loads none of the evaluator, the reports, the web
server or a framework, reads the embedded SQLite database without SQLAlchemy, and PostgreSQL
through SQLAlchemy's Core without its ORM. ``verify`` of a lockfile whose files are all in the
verified-state cache (nothing to hash) still re-derives the lockfile from the registry, and
loads only what that takes (``VERIFY_UNLOADED``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from pinbench.workspace import Workspace
from tests.helpers import (
    DIGITS_ACCURACY,
    Cli,
    dataset_manifest,
    dump,
    framework_manifest,
    in_process_cli,
    model_manifest,
    tiny_onnx,
    write_files,
)
from tests.run_kinds import SERIES, History, history_home

STARTUP_HEAVY = ["sqlalchemy", "numpy"]
READ_HEAVY = [
    "pinbench.evaluator",
    "pinbench.reports",
    "litestar",
    "jinja2",
    "torch",
    "tensorflow",
    "onnxruntime",
    "ray",
    "rouge_score",  # the host's scorers of generated texts, imported as it scores (3 s)
    "nltk",
    "jiwer",
]

# Runs the CLI's main with argv[2:], then writes the names in sys.modules to argv[1].
CHILD = """
import json, sys
from pinbench.cli import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    json.dump(sorted(sys.modules), f)
sys.exit(code)
"""


def _run(
    home: Path,
    tmp_path: Path,
    *args: str,
    database_url: str | None = None,
    exits: tuple[int, ...] = (0,),
) -> tuple[str, set[str]]:
    """``pinbench ARGS`` in a fresh interpreter against ``home`` (it must exit with one of
    ``exits``): its stdout and the modules it loaded."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINBENCH_")}
    env["PINBENCH_HOME"] = str(home)
    if database_url is not None:
        env["PINBENCH_DATABASE_URL"] = database_url
    record = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(record), *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in exits, (args, proc.returncode, proc.stderr[-2000:])
    return proc.stdout, set(json.loads(record.read_text()))


def _loaded(modules: set[str], packages: list[str]) -> list[str]:
    """The packages of ``packages`` of which anything is in ``modules``."""
    return [p for p in packages if any(m == p or m.startswith(p + ".") for m in modules)]


@pytest.fixture
def home(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    database_url: str,
) -> Path:
    """An initialised home with one dataset published at 1.0.0 and 1.1.0, on each engine."""
    cli: Cli = in_process_cli(monkeypatch, capsys, tmp_path / "home", database_url)
    assert cli("init").code == 0
    for v in ("1.0.0", "1.1.0"):
        root = tmp_path / f"digits-{v}"
        files = write_files(root, {"x.npy": b"images" + v.encode(), "y.npy": b"labels"})
        manifest = dump(root / "d.yaml", dataset_manifest("digits", v, files))
        assert cli("publish", str(manifest)).code == 0
    return tmp_path / "home"


STARTUP = [
    pytest.param(["--help"], "Usage: pinbench", id="--help"),
    pytest.param(["--version"], f"pinbench {version('pinbench')}\n", id="--version"),
    pytest.param(["range", "^1", "1.2.3", "2.0.0"], "1.2.3\n", id="range"),
    pytest.param(["digest", "{file}"], "{file}\n", id="digest"),
]


@pytest.mark.parametrize(("args", "out"), STARTUP)
def test_startup_commands_load_neither_sqlalchemy_nor_numpy(
    tmp_path: Path, args: list[str], out: str
) -> None:
    # digest hashes through the blob store's verified-state cache, never the database
    file = tmp_path / "weights.bin"
    file.write_bytes(b"0123456789")
    argv = [a.format(file=file) for a in args]
    stdout, modules = _run(tmp_path / "home", tmp_path, *argv)
    assert out.format(file=file) in stdout
    assert _loaded(modules, STARTUP_HEAVY + READ_HEAVY) == []


def test_help_imports_no_command_module_and_neither_typer_nor_rich(tmp_path: Path) -> None:
    """``pinbench --help`` lists every command from the root's table: no command's module (nor
    Typer, nor Rich, nor pydantic) is imported to print it."""
    stdout, modules = _run(tmp_path / "home", tmp_path, "--help")
    assert "verify" in stdout and "import-mlmodelscope" in stdout
    commands = sorted(m for m in modules if m.startswith("pinbench.cli."))
    assert commands == []
    assert _loaded(modules, ["typer", "rich", "pydantic"]) == []


READS = [
    pytest.param(["list"], "1.1.0", id="list"),
    pytest.param(["show", "dataset/digits@1.0.0"], "dataset/digits@1.0.0", id="show"),
    pytest.param(["resolve", "dataset/digits@^1"], "dataset/digits@1.1.0", id="resolve"),
    pytest.param(["systems", "list"], "no systems yet", id="systems"),
]


@pytest.mark.parametrize(("args", "out"), READS)
def test_read_commands_load_no_evaluator_reports_server_or_framework(
    home: Path, tmp_path: Path, database_url: str, args: list[str], out: str
) -> None:
    stdout, modules = _run(home, tmp_path, *args, database_url=database_url)
    assert out in stdout
    assert _loaded(modules, [*READ_HEAVY, "numpy", "sqlalchemy.orm"]) == []
    if database_url.startswith("sqlite"):
        assert "sqlite3" in modules  # it did read the database, with the standard library
        assert _loaded(modules, ["sqlalchemy"]) == []
    else:
        assert _loaded(modules, ["sqlalchemy"]) == ["sqlalchemy"]


# (package, why a cache-hit ``verify`` has no use for it): the verify tests hold what it checks
VERIFY_UNLOADED = [
    ("sqlalchemy.orm", "the pinned versions are read with plain SQL (Workspace.reads)"),
    ("numpy", "a lockfile's dataset task is looked up, not its scorer (tasks.base's aliases)"),
    ("pinbench.evaluator", "nothing is run"),
    ("rich", "the verdict is one plain line; a progress bar only for a file being hashed"),
    ("http.client", "no file is missing: no source is fetched (Fetcher imports a scheme's client)"),
    ("yaml", "the manifests are the registry's stored JSON, not YAML files"),
    ("resolvelib", "the pins are checked against their ranges, nothing is resolved"),
]
VERIFY_UNLOADED_ON_SQLITE = [  # SQLAlchemy and psycopg, which read PostgreSQL, import these
    ("sqlalchemy", "SQLite is read with the standard library's sqlite3"),
    ("tempfile", "nothing is written to scratch (artifacts.scratch)"),
    ("ctypes", "nothing is copied into the store (artifacts.copy)"),
]


def test_a_cache_hit_verify_loads_only_what_rederiving_the_lockfile_takes(
    home: Path,
    tmp_path: Path,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cli: Cli = in_process_cli(monkeypatch, capsys, home, database_url)
    files = write_files(tmp_path / "model", {"m.onnx": tiny_onnx(b"imports")})
    for manifest in (
        framework_manifest("onnxruntime", "1.17.3"),
        model_manifest("digits-model", "1.0.0", files),
    ):
        assert cli("publish", str(dump(tmp_path / "model" / "m.yaml", manifest))).code == 0
    request = {
        "model": "digits-model@^1",
        "framework": "onnxruntime@>=1.17 <2",
        "dataset": "digits@^1",
        "system": {"arch": "amd64", "device": "cpu"},
    }
    lock = tmp_path / "digits.lock"
    assert cli("lock", str(dump(tmp_path / "request.yaml", request)), "-o", str(lock)).code == 0
    first = cli("verify", str(lock))  # hashes every file: the verified-state cache is filled
    assert first.code == 0, first.err
    stdout, modules = _run(home, tmp_path, "verify", str(lock), database_url=database_url)
    assert stdout.startswith("verified lockfile") and "3 item(s)" in stdout
    unloaded = VERIFY_UNLOADED + (
        VERIFY_UNLOADED_ON_SQLITE if database_url.startswith("sqlite") else []
    )
    loaded = {p: why for p, why in unloaded if _loaded(modules, [p])}
    assert loaded == {}


def test_defaults_written_out_for_help_agree_with_the_library() -> None:
    # --help shows them without importing the evaluator or the catalog (NumPy)
    from pinbench.catalog.parts import PARTS
    from pinbench.cli import catalog, run_options
    from pinbench.evaluator.verdicts.rerun import REPEAT
    from pinbench.evaluator.verdicts.verdict import BAND, MIN_EFFECT
    from pinbench.sdk import inquiries

    assert (run_options.REPEAT, run_options.BAND, catalog.PARTS) == (REPEAT, BAND, PARTS)
    assert run_options.MIN_EFFECT == inquiries.MIN_EFFECT == MIN_EFFECT
    assert (inquiries.REPEAT, inquiries.BAND) == (REPEAT, BAND)


def test_the_console_script_keeps_exit_codes_and_flushes_everything(tmp_path: Path) -> None:
    """`pinbench` (the installed script) leaves without Python's module teardown: the exit
    code, the whole of a long output on a pipe, and an error's message are as with main()."""
    script = Path(sys.executable).parent / "pinbench"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINBENCH_")}
    env["PINBENCH_HOME"] = str(tmp_path / "home")
    versions = [f"1.{i}.0" for i in range(5000)]
    listed = subprocess.run(
        [str(script), "range", "^1", *versions], env=env, capture_output=True, text=True
    )
    assert listed.returncode == 0
    assert listed.stdout.splitlines() == versions
    refused = subprocess.run(
        [str(script), "show", "dataset/digits@1.0.0"], env=env, capture_output=True, text=True
    )
    assert refused.returncode == 1
    assert "no pinbench schema: run `pinbench init`" in refused.stderr
    usage = subprocess.run([str(script), "show"], env=env, capture_output=True, text=True)
    assert usage.returncode == 2


def test_runs_show_and_list_read_with_plain_sql(digits: Workspace, tmp_path: Path) -> None:
    """``runs show`` prints a run's per-sample rows (``run_samples``) without the reports'
    renderers, their data gathering or Jinja2 (decision 290: before ``run_samples`` left the
    reports package, reading the rows imported all three). It and ``runs list`` read with plain
    SQL (issue 75, item 3), and so does ``runs compare``: no ORM, and on SQLite no SQLAlchemy
    at all."""
    import pinbench

    registry = pinbench.Registry(digits.settings.home, database_url=digits.settings.database_url)
    run = registry.lock(DIGITS_ACCURACY)[0].run(runner="local")
    stdout, modules = _run(
        digits.settings.home,
        tmp_path,
        "runs",
        "show",
        run.id,
        database_url=digits.settings.database_url,
    )
    assert run.id in stdout and "top-1" in stdout  # the rows were shown
    assert "pinbench.run_samples" in modules
    assert _loaded(modules, ["pinbench.reports", "jinja2", "litestar"]) == []
    # the run is read with plain SQL (``records.run_view``, issue 75): no ORM, and on SQLite
    # no SQLAlchemy at all
    assert _loaded(modules, ["sqlalchemy.orm", "pinbench.db.models"]) == []
    if digits.settings.database_url.startswith("sqlite:///"):
        assert _loaded(modules, ["sqlalchemy"]) == []
    listed, modules = _run(
        digits.settings.home,
        tmp_path,
        "runs",
        "list",
        "--status",
        "succeeded",
        database_url=digits.settings.database_url,
    )
    assert run.id[:8] in listed
    assert _loaded(modules, ["sqlalchemy.orm", "pinbench.db.models"]) == []
    if digits.settings.database_url.startswith("sqlite:///"):
        assert _loaded(modules, ["sqlalchemy"]) == []
    compared, modules = _run(
        digits.settings.home,
        tmp_path,
        "runs",
        "compare",
        run.id,
        run.id,
        database_url=digits.settings.database_url,
    )
    assert "top1" in compared  # runs side by side (``records.run_compare``), plain SQL too
    assert _loaded(modules, ["sqlalchemy.orm", "pinbench.db.models"]) == []
    if digits.settings.database_url.startswith("sqlite:///"):
        assert _loaded(modules, ["sqlalchemy"]) == []


def test_runs_delete_and_prune_write_with_plain_sql(digits: Workspace, tmp_path: Path) -> None:
    """``runs delete`` and ``runs prune`` (issue 75, item 3) read and remove rows with plain
    SQL: no ORM, and on SQLite no SQLAlchemy at all."""
    import pinbench

    registry = pinbench.Registry(digits.settings.home, database_url=digits.settings.database_url)
    first = registry.lock(DIGITS_ACCURACY)[0].run(runner="local")
    url = digits.settings.database_url
    for args in (
        ("runs", "prune", "--keep-days", "0", "--keep-last", "1"),  # a dry run: nothing goes
        ("runs", "delete", first.id[:8], "--yes"),
    ):
        _, modules = _run(digits.settings.home, tmp_path, *args, database_url=url)
        assert _loaded(modules, ["sqlalchemy.orm"]) == [], args
        if url.startswith("sqlite:///"):
            assert _loaded(modules, ["sqlalchemy"]) == [], args
    assert first.id not in {r.id for r in registry.runs()}


def test_series_show_reads_with_plain_sql_and_no_numpy(digits: Workspace, tmp_path: Path) -> None:
    """``series show`` reads the series' runs and thresholds with plain SQL (issue 75, item 3):
    no ORM, no NumPy or SciPy (a threshold is data: ``series.threshold``), and on SQLite no
    SQLAlchemy at all; what it prints is the series' runs and its threshold. ``gate``,
    ``series threshold set`` and ``series alerts`` read and write with plain SQL too."""
    import numpy as np

    from pinbench.series.members import resolve
    from pinbench.series.stats import Threshold
    from pinbench.series.thresholds import set_threshold, thresholds
    from tests.series_data import latencies, lock, record

    rng = np.random.default_rng(75)
    locked = lock(digits, "1.1.0")
    runs = [record(digits, locked, i, latencies(rng, 100_000)) for i in range(3)]
    key, members = resolve(digits, "vision/digits-logreg")
    metric = "framework_latency_p50_ns"
    set_threshold(digits, key, members, Threshold(metric, "relative", "lower", 0.1), by="t")
    stdout, modules = _run(
        digits.settings.home,
        tmp_path,
        "series",
        "show",
        str(key),
        "--json",
        database_url=digits.settings.database_url,
    )
    shown = json.loads(stdout)
    assert [p["run"] for p in shown["points"]] == runs
    assert [(t["metric"], t["test"], t["version"]) for t in shown["thresholds"]] == [
        (metric, "relative", 1)
    ]
    assert _loaded(modules, ["sqlalchemy.orm", "numpy", "scipy"]) == []
    # ``gate`` computes (NumPy; SciPy only for a test) but reads with plain SQL: an earlier run
    # of the series is judged and, not being the newest, records no alert, so no ORM is imported
    judged, modules = _run(
        digits.settings.home,
        tmp_path,
        "gate",
        "--run",
        runs[1],
        "--json",
        database_url=digits.settings.database_url,
        exits=(0, 1, 2),
    )
    assert json.loads(judged)["run"] == runs[1]
    assert _loaded(modules, ["sqlalchemy.orm", "pinbench.evaluator.run"]) == []
    assert _loaded(modules, ["scipy"]) == []  # a relative threshold computes no test
    if digits.settings.database_url.startswith("sqlite:///"):
        assert _loaded(modules, ["sqlalchemy"]) == []
    # the series' other commands too: a threshold set (a new version), the alerts listed
    for args in (
        ["series", "threshold", "set", str(key), metric, "--test", "relative", "--max-change",
         "0.2"],
        ["series", "alerts", "--json"],
    ):  # fmt: skip
        _, modules = _run(
            digits.settings.home, tmp_path, *args, database_url=digits.settings.database_url
        )
        assert _loaded(modules, ["sqlalchemy.orm"]) == [], args
        if digits.settings.database_url.startswith("sqlite:///"):
            assert _loaded(modules, ["sqlalchemy"]) == [], args
    versions = [t.version for t in thresholds(digits, key, every_version=True)]
    assert versions == [1, 2]
    if digits.settings.database_url.startswith("sqlite:///"):
        assert _loaded(modules, ["sqlalchemy"]) == []


def test_lock_records_its_lockfile_with_plain_sql(digits: Workspace, tmp_path: Path) -> None:
    """``lock`` resolves, pins and records its lockfile in one plain SQL transaction
    (``Workspace.writes``, issue 75, item 3): no ORM, and on SQLite no SQLAlchemy at all; the
    lockfile it wrote is the one recorded (a second lock of the same request finds it)."""
    from pinbench.registry.lockfile import Lockfile

    request = dump(tmp_path / "request.yaml", DIGITS_ACCURACY)
    home, url = digits.settings.home, digits.settings.database_url
    for n in (1, 2):
        out = tmp_path / f"digits-{n}.lock"
        _, modules = _run(home, tmp_path, "lock", str(request), "-o", str(out), database_url=url)
        assert _loaded(modules, ["sqlalchemy.orm", "numpy"]) == []
        if url.startswith("sqlite:///"):
            assert _loaded(modules, ["sqlalchemy"]) == []
    first, second = (Lockfile.read(tmp_path / f"digits-{n}.lock") for n in (1, 2))
    assert first.digest == second.digest
    with digits.reads() as rows:
        ((body,),) = rows("SELECT body FROM lockfiles WHERE digest = :d", {"d": first.digest.hex})
    assert str(body).encode() == first.canonical


def test_publish_records_its_rows_with_plain_sql(digits: Workspace, tmp_path: Path) -> None:
    """``publish`` checks the version is free and inserts the artifact's and its files' rows in
    one plain SQL transaction (``Workspace.writes``, issue 75, item 3): no ORM, and on SQLite
    no SQLAlchemy at all; publishing the same manifest again is the no-op it was. Yanking it
    changes its row the same way."""
    import pinbench

    root = tmp_path / "colours"
    files = write_files(root, {"x.npy": b"images of colours", "y.npy": b"their labels"})
    manifest = dump(root / "d.yaml", dataset_manifest("colours", "1.0.0", files))
    home, url = digits.settings.home, digits.settings.database_url
    for _ in range(2):
        _, modules = _run(home, tmp_path, "publish", str(manifest), database_url=url)
        assert _loaded(modules, ["sqlalchemy.orm"]) == []
        if url.startswith("sqlite:///"):
            assert _loaded(modules, ["sqlalchemy"]) == []
    registry = pinbench.Registry(home, database_url=url)
    shown = registry.show("dataset/colours@1.0.0")
    assert sorted(f["path"] for f in shown["files"]) == ["x.npy", "y.npy"]
    yank = ["yank", "dataset/colours@1.0.0", "--reason", "mislabelled"]
    _, modules = _run(home, tmp_path, *yank, database_url=url)  # a row changed, plain SQL too
    assert _loaded(modules, ["sqlalchemy.orm"]) == []
    if url.startswith("sqlite:///"):
        assert _loaded(modules, ["sqlalchemy"]) == []
    assert registry.show("dataset/colours@1.0.0")["yanked"] is True


# ---------------------------------------------------------------- a home with history (issue 83)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """A home on SQLite with one run of every kind the demo makes (``tests.run_kinds``)."""
    return history_home(tmp_path_factory.mktemp("history"))


NAMING_LOADS_NONE_OF = ["numpy", "sqlalchemy", "pinbench.tasks.registry", "pinbench.tasks.base"]

# Prints, for each run given as JSON on stdin, what `runs show` and `runs list` print of its
# metrics, then the modules that took.
NAMING = """
import json, sys
from pinbench.run_figures import figures
from pinbench.run_metrics import headline
for info in json.load(sys.stdin):
    print(headline(info), figures(info).rows)
print(json.dumps(sorted(sys.modules)))
"""


def test_naming_the_metrics_of_every_kind_of_run_imports_no_task(history: History) -> None:
    """Issue 83, item 7: a metric's label, unit and headline are data the tasks declare
    (``pinbench.tasks.metrics``): showing every metric of every kind of run imports no task's
    module, nor the tasks' registry, nor NumPy (before, each name looked up imported every
    task, and with them NumPy)."""
    import pinbench

    with pinbench.Registry(history.home, database_url=history.database_url) as registry:
        infos = [registry.run(r).info for r in history.runs.values()]
    proc = subprocess.run(
        [sys.executable, "-c", NAMING],
        input=json.dumps(infos),
        capture_output=True,
        text=True,
        check=True,
    )
    *shown, last = proc.stdout.splitlines()
    modules = set(json.loads(last))
    assert any("ROUGE-L" in line for line in shown) and any("EER" in line for line in shown)
    tasks = [m for m in modules if m.startswith("pinbench.tasks.") and m.count(".") > 2]
    declarations = [m for m in tasks if m.endswith(".declared") or m == "pinbench.tasks.metrics"]
    assert _loaded(modules, NAMING_LOADS_NONE_OF) == []
    assert sorted(set(tasks) - set(declarations)) == ["pinbench.tasks.detection.stats"]


def _task_code(modules: set[str]) -> list[str]:
    """The modules of a task's folder loaded, but its declarations (``declared``: its metrics
    and datasets as data) and detection's statistics' names, which they read."""
    return sorted(
        m
        for m in modules
        if m.startswith("pinbench.tasks.")
        and m.count(".") > 2  # a task's folder (its package) holds nothing
        and not m.endswith(".declared")
        and m != "pinbench.tasks.detection.stats"
    )


WORKING_LOADS_NONE_OF = ["numpy", "scipy", "sqlalchemy", "pinbench.reports", "jinja2", "litestar"]
WORKING = [
    pytest.param(["runs", "show", "{traced}"], id="runs-show-traced"),
    pytest.param(["runs", "show", "{performance}"], id="runs-show-performance"),
    pytest.param(["runs", "show", "{classification}"], id="runs-show-accuracy"),
    pytest.param(["runs", "show", "{operator}"], id="runs-show-operator"),
    pytest.param(["runs", "show", "{training}"], id="runs-show-training"),
    pytest.param(["runs", "show", "{distributed}"], id="runs-show-distributed"),
    pytest.param(["runs", "show", "{generating}"], id="runs-show-generating"),
    pytest.param(["runs", "show", "{detection}"], id="runs-show-detection"),
    pytest.param(["runs", "show", "{speaker-verification}"], id="runs-show-speaker"),
    pytest.param(["runs", "list"], id="runs-list"),
    pytest.param(["series", "show", SERIES], id="series-show"),
    pytest.param(["verify", "{lockfile}"], id="verify"),
    pytest.param(["gate", "--run", "{performance}"], id="gate"),
]


@pytest.mark.parametrize("args", WORKING)
def test_working_commands_on_a_home_with_every_kind_of_run(
    history: History, tmp_path: Path, args: list[str]
) -> None:
    """Issue 83, item 7: on a home holding a run of every kind the demo makes, reading a run
    or the runs loads neither NumPy, nor SQLAlchemy (SQLite is read with plain SQL), nor any
    task's code: each stored lockfile's dataset is checked against its task's declaration
    (``tasks.datasets``), and each metric named from the tasks' declarations
    (``tasks.metrics``)."""
    argv = [a.format(**history.runs, lockfile=history.lockfile) for a in args]
    _, modules = _run(history.home, tmp_path, *argv, database_url=history.database_url)
    assert _loaded(modules, WORKING_LOADS_NONE_OF) == []
    assert _task_code(modules) == []

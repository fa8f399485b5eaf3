"""No CLI command loads SQLAlchemy's ORM but those that make or migrate the schema and the
servers (issue 75, item 3: "the ORM stays where it earns its keep (migrations, the server),
never on a CLI command's path").

Every command of the CLI contract is a row of ``COMMANDS`` (run as a user runs it, in a fresh
interpreter, against one home: the digits catalog published, a run recorded) or of
``ORM_ALLOWED`` with its reason; a new command must be put in one of them. Each row says the
exit codes it may end with: most end 0, having done their work; a few are run to a refusal
that needs what this machine lacks (docker, a server), past their module's imports.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.helpers import DIGITS, DIGITS_ACCURACY, dataset_manifest, dump, write_files
from tests.test_cli_imports import _run as run_child

CONTRACT = json.loads((Path(__file__).parent / "data" / "cli_contract.json").read_text())

ORM_ALLOWED = {
    "init": "makes the schema: Alembic over the ORM's metadata",
    "db check": "compares the schema with the ORM's metadata (Alembic)",
    "db upgrade": "migrates the schema (Alembic)",
    "restore": "migrates the restored database to the current schema",
    "serve": "the server",
    "agent start": "a cluster agent: a server of its own",
    "demo": "makes its home (init: migrations) for the whole flow",
    "catalog publish": "makes the catalog's registry home (init: migrations)",
    "catalog evaluate": "makes the registry home it evaluates in, if absent (init: migrations)",
}

CORE_ON_SQLITE = {"db current": "reads Alembic's revision table (a migration command)"}


@dataclass(frozen=True)
class Row:
    args: str
    """The command line, split at spaces; ``{name}`` is a value of the home's fixture."""
    exits: tuple[int, ...] = (0,)


#  command                   the command line                                exit codes
COMMANDS = {
    "--help":              Row("--help"),
    "range":               Row("range ^1 1.2.3 2.0.0"),
    "digest":              Row("digest {request}"),
    "list":                Row("list"),
    "show":                Row("show model/vision/digits-logreg@1.0.0"),
    "resolve":             Row("resolve dataset/sklearn-digits-test@^1"),
    "publish":             Row("publish {manifest}"),
    "yank":                Row("yank dataset/colours@1.0.0 --reason mislabelled"),
    "lock":                Row("lock {request} -o {tmp}/again.lock"),
    "verify":              Row("verify {lock}"),
    "run":                 Row("run {lock} --runner local"),
    "rerun":               Row("rerun {run} --runner local"),
    "bisect":              Row("bisect {run} {run}", (1,)),  # one run: refused, read first
    "gate":                Row("gate --run {run}", (0, 1, 2)),
    "lockfile import":     Row("lockfile import {lock} --from http://127.0.0.1:9"),  # all here
    "runs list":           Row("runs list"),
    "runs show":           Row("runs show {run}"),
    "runs compare":        Row("runs compare {run} {run}"),
    "runs parity":         Row("runs parity {run} {run}"),
    "runs outputs":        Row("runs outputs {run} -o {tmp}/outputs.npy"),
    "runs report":         Row("runs report {run} --md {tmp}/report.md"),
    "runs trace":          Row("runs trace {run}", (1,)),  # ran untraced: said so
    "runs attest":         Row("runs attest {run} -o {tmp}/run.intoto.jsonl"),
    "attest verify":       Row("attest verify {tmp}/run.intoto.jsonl"),
    "runs cancel":         Row("runs cancel {run}", (1,)),  # finished: refused, read first
    "runs publish":        Row("runs publish {run} model/vision/x@1.0.0", (1,)),
    "fsck":                Row("fsck"),  # before runs go: their blobs wait for gc
    "doctor":              Row("doctor --only sandbox --only storage"),
    "gc":                  Row("gc"),
    "backup":              Row("backup {tmp}/backup"),
    "runs prune":          Row("runs prune --keep-days 0 --keep-last 1"),
    "runs delete":         Row("runs delete {run} --yes"),
    "series list":         Row("series list"),
    "series show":         Row("series show {series}"),
    "series threshold set": Row("series threshold set {series} top1 --test t"),
    "series threshold list": Row("series threshold list {series}"),
    "series alerts":       Row("series alerts"),
    "series ack":          Row("series ack 1", (1,)),  # no such alert
    "systems list":        Row("systems list"),
    "systems show":        Row("systems show lab", (1,)),  # none yet
    "study run":           Row("study run {study}"),
    "study list":          Row("study list"),
    "study show":          Row("study show orm"),
    "study report":        Row("study report orm --html {tmp}/study.html"),
    "study rerun":         Row("study rerun orm"),
    "study forget":        Row("study forget orm"),
    "keys list":           Row("keys list"),
    "keys export":         Row("keys export {keyid} -o {tmp}/key.pem"),
    "keys rotate":         Row("keys rotate --kind model-signing"),
    "user add":            Row("user add ann"),
    "user grant":          Row("user grant ann vision"),
    "user revoke":         Row("user revoke ann vision"),
    "user list":           Row("user list"),
    "user disable":        Row("user disable ann"),
    "user enable":         Row("user enable ann"),
    "token create":        Row("token create --user ann --name t --scope read"),
    "token list":          Row("token list --user ann"),
    "token revoke":        Row("token revoke 0123456789abcdef", (1,)),  # no such token
    "user delete":         Row("user delete ann"),
    "schema":              Row("schema {tmp}/schemas"),
    "ops list":            Row("ops list"),
    "ops run":             Row("ops run relu --shape shape=8 --frameworks onnxruntime --samples 2"),
    "ops sweep":           Row("ops sweep {tmp}/absent.yaml", (1, 2)),
    "images build":        Row("images build absent-framework", (1,)),
    "images pull":         Row("images pull absent --registry 127.0.0.1:9", (1,)),
    "images push":         Row("images push absent --registry 127.0.0.1:9", (1,)),
    "import-mlmodelscope": Row("import-mlmodelscope {mlmodelscope} -o {tmp}/mms"),
    "manifest model":      Row("manifest model {onnx} -o {tmp}/model.yaml"),
    "manifest dataset":    Row("manifest dataset {samples} --labels none -o {tmp}/d.yaml"),
    "manifest framework":  Row("manifest framework {framework} -o {tmp}/framework.yaml"),
    "catalog prepare":     Row("catalog prepare --parts digits {tmp}/prepared"),
    "catalog train":       Row("catalog train {tmp}/prepared {tmp}/weights", (3,)),  # digits only
    "catalog export":      Row("catalog export {tmp}/prepared {tmp}/exported", (1,)),  # no weights
    "db current":          Row("db current"),
    "catalog report":      Row("catalog report {tmp}/prepared {tmp}/report", (1,)),  # no runs
}  # fmt: skip


def test_every_command_is_in_one_table() -> None:
    commands = {c for c, spec in CONTRACT.items() if not spec["group"]}
    assert not set(COMMANDS) & set(ORM_ALLOWED)
    assert sorted(commands - set(COMMANDS) - set(ORM_ALLOWED)) == [], "put it in a table"
    assert sorted((set(COMMANDS) | set(ORM_ALLOWED)) - commands - {"--help"}) == []


@pytest.fixture(scope="module")
def values(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> dict[str, str]:
    """A home (SQLite) with the digits catalog and one accuracy run, and what the rows name."""
    import onnxruntime

    import pinbench
    from tests.helpers import published_home

    root = tmp_path_factory.mktemp("cli-orm")
    with published_home(root, catalog_dir) as home:
        registry = pinbench.Registry(home.home, database_url=home.db)
        locked = registry.lock(DIGITS_ACCURACY)[0]
        run = locked.run(runner="local")
        lock = root / "digits.lock"
        locked.write(lock)
        keys = registry.keys()[0]
    colours = root / "colours"
    files = write_files(colours, {"x.npy": b"images of colours", "y.npy": b"their labels"})
    study = {
        "name": "orm",
        "models": [DIGITS],
        "scenarios": {"accuracy": {"name": "SingleStream", "mode": "accuracy"}},
        "systems": [{"name": "one", "threads": 1}],
    }
    samples = root / "samples"
    samples.mkdir()
    for i in range(3):
        (samples / f"{i}.npy").write_bytes(_npy(i))
    shutil.copy(catalog_dir / "digits-logreg-1.0.0" / "digits-logreg.onnx", root / "model.onnx")
    (root / "study.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    found = {
        "home": str(home.home),
        "db": home.db,
        "tmp": str(root),
        "run": run.id,
        "lock": str(lock),
        "request": str(dump(root / "request.yaml", DIGITS_ACCURACY)),
        "manifest": str(dump(colours / "d.yaml", dataset_manifest("colours", "1.0.0", files))),
        "study": str(root / "study.yaml"),
        "keyid": next(k["keyid"] for k in keys if k["purpose"] == "attestation"),
        "onnx": str(root / "model.onnx"),
        "samples": str(samples),
        "framework": f"onnxruntime=={onnxruntime.__version__}",
        "mlmodelscope": str(
            Path(__file__).parent
            / "data"
            / "mlmodelscope"
            / "tensorflow"
            / "MobileNet_v1_1.0_224.yml"
        ),
    }
    listed, _ = _run(found, ["series", "list", "--json"], (0,))
    (found["series"],) = [s["name"] for s in json.loads(listed)]
    return found


def _npy(i: int) -> bytes:
    import io

    import numpy as np

    out = io.BytesIO()
    np.save(out, np.full((2, 2), i, dtype=np.float32))
    return out.getvalue()


def _run(values: dict[str, str], args: list[str], exits: tuple[int, ...]) -> tuple[str, set[str]]:
    """``pinbench ARGS`` in a fresh interpreter on the home (``test_cli_imports._run``)."""
    home, tmp = Path(values["home"]), Path(values["tmp"])
    return run_child(home, tmp, *args, database_url=values["db"], exits=exits)


def test_no_command_loads_the_orm(values: dict[str, str]) -> None:
    """Nor, on the embedded SQLite database, SQLAlchemy at all (SQLite's own driver reads and
    writes), but for ``CORE_ON_SQLITE``."""
    orm, core = {}, {}
    for command, row in COMMANDS.items():
        args = [part.format(**values) for part in row.args.split(" ")]
        _, modules = _run(values, args, row.exits)
        orm[command] = "sqlalchemy.orm" in modules
        core[command] = "sqlalchemy" in modules
    assert [c for c, loaded in orm.items() if loaded] == []
    assert [c for c, loaded in core.items() if loaded] == sorted(CORE_ON_SQLITE)

"""Shared fixtures: workspaces on SQLite and on a real PostgreSQL server started here, and a
real ``pinbench serve`` per test module.

Under pytest-xdist (``make test``: ``-n`` one more than the cores, ``--dist loadgroup``) the
built catalogs and the virtual-environment cache are built once for the whole run and read by
every worker (``tests/sharing.py``); the servers (PostgreSQL, SeaweedFS) are one per worker; a
test that uses a module-scoped fixture runs on the worker that holds its module's fixture."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from sqlalchemy import create_engine, text

from pinbench import catalog as builtin
from pinbench.config import Settings
from pinbench.workspace import Workspace
from tests.apiserver import Server, api_server
from tests.helpers import Cli, copied_workspace, in_process_cli, published_workspace
from tests.pg import postgres_server
from tests.s3server import S3Server, WeedMini, weed_mini
from tests.sharing import (
    build_notes,
    built_once,
    group_module_fixtures,
    run_folder,
    under_xdist,
)

# Hypothesis' timing checks measure the machine, not the code: on two cores shared with other
# work (a parallel suite, a server the tests started) generating inputs can take a second.
# Every example and assertion stays; only the checks that fail a test for being slow go.
settings.register_profile(
    "shared-machine", suppress_health_check=[HealthCheck.too_slow], deadline=None
)
settings.load_profile("shared-machine")


@pytest.hookimpl(tryfirst=True)  # before xdist's worker turns the groups into node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, a test that uses a module-scoped fixture goes to its module's
    group (``tests/sharing.py``): the fixture is built on one worker, not on each."""
    if config.pluginmanager.hasplugin("xdist"):
        group_module_fixtures(items)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The shared builds of the run (``tests/sharing.py``): each one's time, and how long a
    worker waited for another's build, idle (issue 49)."""
    if under_xdist():
        return
    notes = build_notes(config._tmp_path_factory)  # type: ignore[attr-defined]
    if notes:
        terminalreporter.write_sep("-", "builds shared by the workers")
        for line in notes:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A PostgreSQL server for the whole session (started on first use)."""
    with postgres_server() as url:
        yield url


@pytest.fixture(scope="session")
def s3_weed() -> Iterator[tuple[S3Server, WeedMini]]:
    """A real S3 server (SeaweedFS) on loopback for the session, and its process's handle: a
    test that stops it (an outage) starts it again before it ends."""
    with weed_mini() as pair:
        yield pair


@pytest.fixture(scope="session")
def s3(s3_weed: tuple[S3Server, WeedMini]) -> S3Server:
    """The session's S3 server; each test takes a prefix of its own in its bucket
    ``pinbench`` (``S3Server.env``)."""
    return s3_weed[0]


def _fresh_pg_database(server_url: str) -> str:
    name = f"t_{uuid.uuid4().hex[:12]}"
    engine = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return server_url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database on each engine."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'pinbench.db'}"
    return _fresh_pg_database(request.getfixturevalue("pg_server"))


def _workspace(home: Path, url: str) -> Iterator[Workspace]:
    ws = Workspace(Settings(home=home, database_url=url))
    ws.init()
    try:
        yield ws
    finally:
        ws.close()


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    """An initialised workspace on the embedded default (SQLite, local blob store)."""
    yield from _workspace(tmp_path / "home", f"sqlite:///{tmp_path / 'home' / 'pinbench.db'}")


@pytest.fixture
def ws_any(tmp_path: Path, database_url: str) -> Iterator[Workspace]:
    """An initialised workspace, once on SQLite and once on PostgreSQL."""
    yield from _workspace(tmp_path / "home", database_url)


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """Run ``pinbench ARGS`` in-process against a home under tmp_path."""
    return in_process_cli(monkeypatch, capsys, tmp_path / "home")


@pytest.fixture(scope="session")
def catalog_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The digits catalog, built once for the run (every worker reads it; tests copy before
    they change anything)."""
    return built_once(tmp_path_factory, "catalog", builtin.build)


@pytest.fixture(scope="session")
def cnn_catalog_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The digits catalog plus the digits CNN in ONNX, PyTorch and Keras (three frameworks)."""
    return built_once(
        tmp_path_factory, "catalog-cnn", lambda root: builtin.build(root, ["digits", "cnn"])
    )


@pytest.fixture(scope="session")
def text_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``minilm`` catalog part: a sentence-embedding model and a sentence-pairs dataset."""
    return built_once(
        tmp_path_factory, "catalog-minilm", lambda root: builtin.build(root, ["minilm"])
    )


@pytest.fixture(scope="session")
def digits_template(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Path:
    """A home and database with the digits catalog published, made once for the run; each
    ``digits`` workspace is a copy of it."""
    return built_once(
        tmp_path_factory,
        "digits-home",
        lambda root: published_workspace(root, catalog_dir).close(),
    )


@pytest.fixture
def digits(tmp_path: Path, digits_template: Path) -> Iterator[Workspace]:
    """A workspace with the digits catalog published (a copy of ``digits_template``: the
    same rows and blobs as publishing it here, issue 49)."""
    ws = copied_workspace(digits_template, tmp_path)
    yield ws
    ws.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Server]:
    """A real ``pinbench serve`` for the test module (tests/apiserver.py): on SQLite, the digits
    catalog published, ``PEOPLE`` with a token each. A module that needs another server
    (options, engine, scope) defines its own ``server``."""
    root = tmp_path_factory.mktemp("server")
    with api_server(root / "home", f"sqlite:///{root}/db.sqlite", catalog_dir=catalog_dir) as srv:
        yield srv


@pytest.fixture(scope="session", autouse=True)
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Virtual environments (named by digest) shared by every test of the run, in a folder of
    the run's own: one for all the workers (the cache locks each environment while it is
    built, as it does for two homes on one machine); beside it the run's own folder of files
    read out of the package models' wheels (``tests/package_models.py``)."""
    root = run_folder(tmp_path_factory) / "pinbench-cache"
    root.mkdir(exist_ok=True)
    files = run_folder(tmp_path_factory) / "package-files"
    files.mkdir(exist_ok=True)
    from tests.package_models import CACHE as WHEELS
    from tests.package_models import FILES

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PINBENCH_CACHE", str(root))
        mp.setenv("PINBENCH_WHEELS", str(WHEELS))  # the catalog's wheels: those make dev fetched
        mp.setenv(FILES, str(files))  # what tests read out of the wheels: this run's own
        yield root


@pytest.fixture(scope="session")
def demo_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder ``pinbench demo`` builds its catalog in (its parts, with its marker), built
    once for the run by the demo's own code: the demo test copies it into its home's work
    folder, so its demo reuses it as a second ``make demo`` does (issue 49)."""
    from pinbench.demo.flow import build_catalog

    return built_once(
        tmp_path_factory, "catalog-demo", lambda root: build_catalog(root, lambda _: None)
    )


@pytest.fixture(scope="session")
def gpt_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``gpt`` catalog part (the tiny GPT-2 trained here, its ONNX export and the prompts
    dataset), built once for the run (the demo generates with the tiny LLaMA instead)."""
    from pinbench.catalog import build

    return built_once(tmp_path_factory, "catalog-gpt", lambda root: build(root, ["gpt"]))


@pytest.fixture(scope="session")
def llama_catalog(tmp_path_factory: pytest.TempPathFactory, demo_catalog: Path) -> Path:
    """The ``llama`` catalog part as ``catalog.build(root, ["llama"])`` writes it (the tiny
    LLaMA, each engine's conversion of it, the prompts dataset), built once for the run from
    the demo's catalog, which trains the same tiny LLaMA (one training of it for the run, not
    two: about a minute of the suite) and converts it for one engine."""
    return built_once(
        tmp_path_factory, "catalog-llama", lambda root: _llama_part(root, demo_catalog)
    )


DEMO_LLAMA = [
    "dataset-digits-test.yaml",
    "digits-test",
    "dataset-python-doc-prompts.yaml",
    "tiny-gpt-prompts",
    "model-tiny-llama.yaml",
    "tiny-llama",
]
"""What the demo's catalog holds of what ``build(root, ["llama"])`` writes, besides the
frameworks' manifests and the engines' conversions."""


def _llama_part(root: Path, demo: Path) -> None:
    """``build(root, ["llama"])``'s files: the demo catalog's tiny LLaMA and prompts, its
    ONNX Runtime GenAI conversion, and the other engines' converted here from its folder."""
    import shutil

    from pinbench.catalog import engines, frameworks, stages
    from pinbench.demo.flow import ENGINES as CONVERTED

    for name in DEMO_LLAMA:
        (shutil.copytree if (demo / name).is_dir() else shutil.copyfile)(demo / name, root / name)
    for name in stages.framework_names(["llama"]):
        frameworks.write(root, name)
    for key, converter in engines.CONVERTERS.items():
        if converter.engine in CONVERTED:
            shutil.copyfile(
                demo / f"model-tiny-llama-{key}.yaml", root / f"model-tiny-llama-{key}.yaml"
            )
            shutil.copytree(demo / f"tiny-llama-{key}", root / f"tiny-llama-{key}")
    rest = [engine for engine in stages.ENGINES if engine not in CONVERTED]
    engines.export(root, root / "tiny-llama", rest)


@pytest.fixture
def two_cores() -> None:
    """``need_two_cores`` as a fixture (``pytest.mark.usefixtures("two_cores")``)."""
    from tests.helpers import need_two_cores

    need_two_cores()

"""``pinbench serve --config FILE`` (issue 38, "a config file (TOML) beside flags and env"):
the file's ``[serve]`` table sets options as the command line names them, each value checked
by the option's own type and bounds; a flag beats its environment variable, which beats the
file, which beats the default; anything the file says that no option means is refused before
the server starts. The options are resolved as ``serve`` resolves them (Click's own parsing
of the real command); one file also starts a real server."""

from __future__ import annotations

from pathlib import Path

import click
import httpx
import pytest

from pinbench.cli.serve import serve
from tests.apiserver import seed_home, serve_process


def _params(*args: str) -> dict[str, object]:
    with serve.make_context("serve", list(args)) as ctx:
        return dict(ctx.params)


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pinbench.toml"
    path.write_text(text)
    return path


def test_the_file_sets_options_by_their_command_line_names(tmp_path: Path) -> None:
    config = _file(
        tmp_path,
        "[serve]\nport = 9123\nmax-upload-mb = 64\nrun_queue = 3\nprivate = true\n"
        'allowed-host = ["a.example", "b.example"]\nlog-format = "json"\n',
    )
    got = _params("--config", str(config))
    assert got["port"] == 9123 and got["max_upload_mb"] == 64 and got["run_queue"] == 3
    assert got["private"] is True and got["log_format"] == "json"
    assert list(got["allowed_host"]) == ["a.example", "b.example"]  # type: ignore[call-overload]
    assert got["host"] == "127.0.0.1"  # not in the file: the default


def test_a_flag_beats_the_environment_which_beats_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _file(tmp_path, "[serve]\ndrain-seconds = 5\nruns-per-user = 2\n")
    monkeypatch.setenv("PINBENCH_DRAIN_S", "7")
    got = _params("--config", str(config), "--runs-per-user", "4")
    assert got["drain_seconds"] == 7 and got["runs_per_user"] == 4
    monkeypatch.delenv("PINBENCH_DRAIN_S")
    assert _params("--config", str(config))["drain_seconds"] == 5
    monkeypatch.setenv("PINBENCH_CONFIG", str(config))  # the file named by the environment
    assert _params()["runs_per_user"] == 2


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[serve]\nprot = 1\n", "unknown key serve.prot"),
        ("[server]\nport = 1\n", "unknown table 'server'"),
        ("[serve]\nport = 1\nport = 2\n", "is not TOML"),
        ("[serve]\nport = 80\n'port' = 81\n", "is not TOML"),
        ("[serve]\nrun-queue = 1\nrun_queue = 2\n", "serve.run_queue is given twice"),
        ("[serve]\nport = 'eighty'\n", "'eighty' is not a valid integer"),
        ("[serve]\ndrain-seconds = 100000000\n", "100000000 is not in the range 0<=x<=86400"),
        ("[serve]\nlog-level = 'loud'\n", "'loud' is not one of"),
        ("serve = 3\n", "serve must be a table"),
    ],
)
def test_what_no_option_means_is_refused_before_anything_starts(
    tmp_path: Path, text: str, says: str
) -> None:
    config = _file(tmp_path, text)
    with pytest.raises(click.UsageError) as caught:
        _params("--config", str(config))
    assert says in caught.value.format_message()


def test_a_server_starts_with_its_options_from_the_file(tmp_path: Path) -> None:
    config = _file(tmp_path, "[serve]\nprivate = true\nready-min-free-mb = 0\n")
    home, db = tmp_path / "home", f"sqlite:///{tmp_path}/db.sqlite"
    seed_home(home, db, None)
    with serve_process(home, db, "--config", str(config)) as (url, _):
        assert httpx.get(f"{url}/api/v1/ready").status_code == 200
        assert (
            httpx.get(f"{url}/api/v1/artifacts").status_code == 401
        )  # private: reads need a token


def test_the_operations_pages_example_is_a_configuration_serve_takes(tmp_path: Path) -> None:
    page = (Path(__file__).parent.parent / "docs" / "operations.md").read_text()
    example = page.split("```toml\n", 1)[1].split("```", 1)[0]
    got = _params("--config", str(_file(tmp_path, example)))
    assert got["host"] == "0.0.0.0" and got["workers"] == 2 and got["drain_seconds"] == 600
    assert list(got["allowed_host"]) == ["pinbench.example.org"]  # type: ignore[call-overload]

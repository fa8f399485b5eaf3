"""Series, thresholds, the gate and alerts on synthetic runs recorded in a registry (issue 51;
decisions 250-253). One module home: the digits catalog published, a series of the logreg
whose model version moves from 1.0.0 to 1.1.0, and runs that must stay out of it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select

from pinbench.db.models import Alert, SeriesThreshold
from pinbench.series.names import MAX_LENGTH, SeriesKey, parse_fields
from pinbench.series.series_errors import BadSeriesName
from pinbench.workspace import Workspace
from tests.helpers import Cli, in_process_cli, published_home
from tests.series_data import SERIES, latencies, lock, record


@dataclass
class Fixture:
    ws: Workspace
    home: Path
    db: str
    history: list[str]
    same: str
    slower: str
    few: str
    few_series: str
    lone: str


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, catalog_dir: Path) -> Iterator[Fixture]:
    rng = np.random.default_rng(51)
    with published_home(tmp_path_factory.mktemp("series"), catalog_dir) as home:
        ws = home.ws
        old, new = lock(ws, "1.0.0"), lock(ws, "1.1.0")
        history = [record(ws, old, i, latencies(rng, 100_000)) for i in range(6)]
        record(ws, old, 6, latencies(rng, 300_000), trace="framework")  # traced: left out
        record(ws, old, 7, latencies(rng, 300_000), status="failed")  # failed: left out
        same = record(ws, new, 10, latencies(rng, 100_000))
        slower = record(ws, new, 11, latencies(rng, 120_000))
        batch4 = lock(ws, "1.0.0", batch_size=4)
        record(ws, batch4, 20, latencies(rng, 100_000))
        few = record(ws, batch4, 21, latencies(rng, 100_000))
        lone = record(ws, old, 30, latencies(rng, 100_000), system="lab-a")  # no thresholds
        yield Fixture(
            ws, home.home, home.db, history, same, slower, few, SERIES.replace(":b1:", ":b4:"), lone
        )


@pytest.fixture
def cli(made: Fixture, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    return in_process_cli(monkeypatch, capsys, made.home, made.db)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("vision/digits-logreg@1.0.0", "without a version"),  # a version is free to move
        ("m:d:Stream", "SCENARIO 'Stream'"),
        ("m:d:Offline:fast", "MODE 'fast'"),
        ("m:d:Offline:accuracy:4", "BATCH '4'"),
        ("m:d:Offline:accuracy:b0", "BATCH 'b0'"),
        ("m:d:Offline:accuracy:b1:Lab_A", "SYSTEM 'Lab_A'"),
        ("m:d:Offline:accuracy:b1:-:x", "7 fields"),
        ("m" * (MAX_LENGTH + 1), f"at most {MAX_LENGTH}"),
    ],
)
def test_a_bad_series_name_is_refused_naming_the_field(text: str, reason: str) -> None:
    with pytest.raises(BadSeriesName, match=reason.replace("(", r"\(")):
        parse_fields(text)


def test_a_series_name_round_trips() -> None:
    for key in (
        SeriesKey("vision/a", "d", "Server", "performance", 8, "lab-a"),
        SeriesKey("a", "ns/d.v2", "Offline", "accuracy", 1, None),
    ):
        assert SeriesKey.parse(str(key)) == key
    assert str(SeriesKey("a", "d", "Offline", "accuracy", 1, None)).endswith(":b1:-")
    with pytest.raises(BadSeriesName, match="6 fields"):
        SeriesKey.parse("a:d")  # a leading part names a series only through a registry


def test_series_list_and_show_order_runs_and_name_the_pin_that_moved(
    made: Fixture, cli: Cli
) -> None:
    listed = cli("series", "list", "--json")
    assert listed.code == 0, listed.err
    names = {row["name"]: row for row in json.loads(listed.out)}
    assert {SERIES, made.few_series, SERIES[:-1] + "lab-a"} <= set(names)  # (+ lab-b's)
    assert names[SERIES]["runs"] == 8  # the traced and the failed run are not in it
    shown = cli("series", "show", SERIES, "--json")
    assert shown.code == 0, shown.err
    info = json.loads(shown.out)
    points = info["points"]
    assert [p["run"] for p in points] == [*made.history, made.same, made.slower]
    assert all(p["moved"] == [] for p in points[1:6])
    assert points[6]["moved"] == ["model vision/digits-logreg@1.0.0 -> vision/digits-logreg@1.1.0"]
    assert info["units"]["framework_latency_p50_ns"] == "ns"
    text = cli("series", "show", SERIES, "--metric", "framework_latency_p50_ns")
    assert text.code == 0 and "digits-logreg@1.1.0" in text.out, text.out
    # a leading part names the series when one series has it; else it is refused
    leading = made.few_series.rsplit(":", 1)[0]
    assert json.loads(cli("series", "show", leading, "--json").out)["name"] == made.few_series
    ambiguous = cli("series", "show", "vision/digits-logreg")
    assert ambiguous.code == 1 and "is ambiguous" in ambiguous.err, ambiguous.err
    missing = cli("series", "show", "vision/nothing")
    assert missing.code == 1 and "no series 'vision/nothing'" in missing.err
    bad = cli("series", "show", SERIES, "--metric", "top5")
    assert bad.code == 1 and "recorded no 'top5'" in bad.err


def _thresholds(ws: Workspace) -> int:
    with ws.transaction() as session:
        return int(session.scalar(select(func.count()).select_from(SeriesThreshold)) or 0)


def test_thresholds_are_versioned_validated_and_refused_without_change(
    made: Fixture, cli: Cli
) -> None:
    series = made.few_series
    args = ("series", "threshold", "set", series, "throughput_sps", "--json")
    first = cli(*args, "--test", "relative", "--max-change", "0.1")
    assert first.code == 0, first.err
    info = json.loads(first.out)
    assert (info["version"], info["added"], info["direction"]) == (1, True, "higher")
    again = json.loads(cli(*args, "--test", "relative", "--max-change", "0.1").out)
    assert (again["version"], again["added"]) == (1, False)  # equal: no new version
    changed = json.loads(cli(*args, "--test", "relative", "--max-change", "0.2").out)
    assert (changed["version"], changed["added"]) == (2, True)
    before = _thresholds(made.ws)
    for extra, named in (
        (("--test", "t", "--alpha", "0.9"), "alpha = 0.9"),
        (("--test", "relative"), "max_change = None"),
        (("--test", "exact", "--tolerance", "1"), "tolerance = 1.0"),
        (("--test", "t", "--window", "3", "--min-runs", "5"), "min_runs = 5"),
    ):
        refused = cli(*args, *extra)
        assert refused.code == 1 and named in refused.err, (extra, refused.err)
    unknown = cli("series", "threshold", "set", series, "top5", "--test", "exact")
    assert unknown.code == 1 and "never recorded 'top5'" in unknown.err
    usage = cli(*args, "--test", "z-score")
    assert usage.code == 2  # Click's usage error
    assert _thresholds(made.ws) == before  # nothing changed
    current = json.loads(cli("series", "threshold", "list", series, "--json").out)
    mine = [r for r in current if r["metric"] == "throughput_sps"]  # (the gate test sets one)
    assert [(r["version"], r["max_change"]) for r in mine] == [(2, 0.2)]
    every = json.loads(cli("series", "threshold", "list", series, "--all", "--json").out)
    assert [r["version"] for r in every if r["metric"] == "throughput_sps"] == [1, 2]


def test_the_gate_passes_fails_and_is_inconclusive_with_its_reasons(
    made: Fixture, cli: Cli, tmp_path: Path
) -> None:
    set_ = ("series", "threshold", "set", SERIES, "framework_latency_p50_ns")
    assert cli(*set_, "--test", "t", "--alpha", "0.01", "--max-change", "0.02").code == 0
    no_thresholds = cli("gate", "--run", made.lone, "--json")
    assert no_thresholds.code == 1 and "has no thresholds" in no_thresholds.err
    assert no_thresholds.out == ""  # no gate object: a user error, not a regression

    passed = cli("gate", "--run", made.same, "--json")
    assert passed.code == 0, passed.err
    info = json.loads(passed.out)
    assert info["outcome"] == "passed" and info["history"] == made.history
    (comparison,) = info["comparisons"]
    assert comparison["threshold"]["version"] == 1 and comparison["test"] == "t"

    summary = tmp_path / "summary.md"
    regressed = cli("gate", "--run", made.slower, "--series", SERIES, "--markdown", str(summary))
    assert regressed.code == 1, regressed.err
    assert "regressed" in regressed.out and "framework_latency_p50_ns" in regressed.out
    markdown = summary.read_text()
    assert markdown.startswith("### ❌ pinbench gate: regressed")
    assert "| `framework_latency_p50_ns` | ❌ regressed | t |" in markdown
    # both p-values of a pooled test, each of which must be under alpha (the CI trial's finding)
    assert "| change (+ worse) | p-value |" in markdown
    assert re.search(r"\| pooled [0-9.e+-]+, runs [0-9.e+-]+ \|", markdown), markdown
    payload = json.loads(cli("gate", "--run", made.slower, "--json").out)
    (worse,) = payload["comparisons"]
    assert worse["change"] == pytest.approx(0.2, abs=0.03) and worse["p_value"] < 0.01

    wrong = cli("gate", "--run", made.slower, "--series", made.few_series)
    assert wrong.code == 1 and "belongs to series" in wrong.err

    few_set = ("series", "threshold", "set", made.few_series, "framework_latency_p50_ns")
    assert cli(*few_set, "--test", "relative", "--max-change", "0.05").code == 0
    undecided = cli("gate", "--run", made.few, "--markdown", "-")
    assert undecided.code == 2, undecided.err
    assert "inconclusive" in undecided.out and "2 more earlier run(s)" in undecided.out

    with made.ws.transaction() as session:  # the regression is one alert, however often gated
        alerts = session.scalars(select(Alert).where(Alert.series == SERIES)).all()
        assert [(a.run_id, a.metric, a.state) for a in alerts] == [
            (made.slower, "framework_latency_p50_ns", "open")
        ]
        alert_id = alerts[0].id
    open_ = ("series", "alerts", "--series", SERIES, "--state", "open", "--json")
    listed = json.loads(cli(*open_).out)
    assert [a["id"] for a in listed] == [alert_id]
    assert cli("series", "ack", str(alert_id)).code == 0
    twice = cli("series", "ack", str(alert_id))
    assert twice.code == 1 and "acknowledged already" in twice.err
    assert cli("series", "ack", "999").code == 1
    assert json.loads(cli(*open_).out) == []


def test_an_alerts_filter_names_a_series_or_is_refused(cli: Cli) -> None:
    """A user trial's finding: ``series alerts --series`` with a name of no series printed
    nothing, as if it had none. It reads the name as ``series show`` does: a bad field, no
    series and several series are refused, naming why."""
    for name, said in (
        ("nope", "no series 'nope'"),
        ("x:y:Bogus", "SCENARIO 'Bogus'"),
        ("vision/digits-logreg", "is ambiguous"),
    ):
        refused = cli("series", "alerts", "--series", name, "--json")
        assert refused.code == 1 and said in refused.err, refused.err
        assert refused.out == ""
    assert cli("series", "alerts", "--series", SERIES, "--json").code == 0


def test_an_option_given_twice_is_refused_not_the_last_one_kept(made: Fixture, cli: Cli) -> None:
    """A user trial's finding: ``--alpha 0.01 --alpha 0.05`` stored 0.05 and ``--test t --test
    relative`` a relative threshold, the last of each kept by Click. Every command refuses an
    option (a flag too, or a flag and its negation) given twice, as a usage error naming it,
    and stores nothing; an option made to repeat (``--run``) still does."""
    count = _thresholds(made.ws)
    args = ("series", "threshold", "set", SERIES, "throughput_sps", "--test", "t")
    twice = cli(*args, "--alpha", "0.01", "--alpha", "0.05")
    assert twice.code == 2 and "--alpha is given more than once" in twice.err
    tests = cli(*args, "--test", "relative", "--max-change", "0.1")
    assert tests.code == 2 and "--test is given more than once" in tests.err
    flags = cli("run", "x.lock", "--allow-code", "--allow-code")
    assert flags.code == 2 and "--allow-code is given more than once" in flags.err
    assert _thresholds(made.ws) == count
    repeated = cli("gate", "--run", made.same, "--run", made.same)
    assert repeated.code == 1 and "is given twice" in repeated.err  # the gate's own refusal
    assert cli("gate", "--help", "--help").code == 0  # an eager option acts at once
    from pinbench.cli import load

    command = load("series").commands["threshold"].commands["set"]  # type: ignore[attr-defined]
    completing = [SERIES, "top1", "--test", "t", "--alpha", "1", "--alpha", "2"]
    command.make_context("set", completing, resilient_parsing=True)  # shell completion


def test_gate_refuses_what_it_cannot_honour_before_running(cli: Cli, tmp_path: Path) -> None:
    neither = cli("gate")
    assert neither.code == 1 and "give the candidate" in neither.err
    both = cli("gate", "--run", "x", "--json", "--markdown", "-")
    assert both.code == 1 and "both print to stdout" in both.err
    lockfile = tmp_path / "never-read.lock"  # the series name is refused before any run
    bad = cli("gate", str(lockfile), "--series", "vision/digits-logreg:NOPE")
    assert bad.code == 1 and "DATASET 'NOPE'" in bad.err and not lockfile.exists()


def test_a_gate_refuses_before_its_candidate_runs_what_it_would_refuse_after(
    made: Fixture, cli: Cli, tmp_path: Path
) -> None:
    """A user trial's findings: a lockfile of another series than --series, a series with no
    runs or no thresholds, and a --markdown file that cannot be written were refused only after
    the candidate had run and been recorded (the last with a traceback). Each is refused
    first, naming what is wrong, and no run is recorded."""
    from pinbench.db.models import Run as RunRow

    def runs() -> int:
        with made.ws.transaction() as session:
            return int(session.scalar(select(func.count()).select_from(RunRow)) or 0)

    def locked(name: str, **extra: Any) -> str:
        path = tmp_path / name
        lock(made.ws, "1.0.0", **extra).write(path)
        return str(path)

    before = runs()
    other = cli("gate", locked("b1.lock"), "--series", made.few_series)
    assert other.code == 1
    assert f"the lockfile's runs belong to series {SERIES}, not {made.few_series}" in other.err
    unknown = cli("gate", locked("b8.lock", batch_size=8))
    assert unknown.code == 1 and "no series 'vision/digits-logreg" in unknown.err
    record(
        made.ws, lock(made.ws, "1.0.0", batch_size=8), 40, latencies(np.random.default_rng(3), 1e5)
    )
    before += 1
    bare = cli("gate", locked("b8.lock", batch_size=8))
    assert bare.code == 1 and ":b8:- has no thresholds" in bare.err
    nowhere = tmp_path / "absent" / "summary.md"
    unwritable = cli("gate", locked("b1.lock"), "--markdown", str(nowhere))
    assert unwritable.code == 1 and "does not exist" in unwritable.err
    assert "Traceback" not in unwritable.err and not nowhere.parent.exists()
    assert runs() == before


def test_a_shift_in_a_series_is_one_change_point_alert_naming_the_pin_that_moved(
    made: Fixture,
) -> None:
    """What a server does after it records a run (``series.watch``): a 40 % shift after six
    runs, when the model version moved, is one alert at the first run after it, raised once."""
    from pinbench.series.members import resolve
    from pinbench.series.stats import Threshold
    from pinbench.series.thresholds import set_threshold
    from pinbench.series.watch import watch_run

    rng = np.random.default_rng(5)
    ws = made.ws
    old, new = lock(ws, "1.0.0"), lock(ws, "1.1.0")
    runs = [record(ws, old, 40 + i, latencies(rng, 100_000), system="lab-b") for i in range(6)]
    runs += [record(ws, new, 50 + i, latencies(rng, 140_000), system="lab-b") for i in range(6)]
    name = SERIES[:-1] + "lab-b"
    assert watch_run(ws, runs[-1]) == []  # no threshold: the series is not searched
    key, members = resolve(ws, name)
    metric = "framework_latency_p50_ns"
    threshold = Threshold(metric=metric, test="relative", direction="lower", max_change=0.05)
    set_threshold(ws, key, members, threshold, by="test")
    (alert,) = watch_run(ws, runs[-1])
    assert (alert["kind"], alert["run"], alert["metric"]) == ("change-point", runs[6], metric)
    assert alert["detail"]["moved"] == [
        "model vision/digits-logreg@1.0.0 -> vision/digits-logreg@1.1.0"
    ]
    assert alert["detail"]["change"] == pytest.approx(0.4, abs=0.03)
    assert watch_run(ws, runs[-1]) == []  # raised once: a second watch says nothing new
    with ws.transaction() as session:
        kinds = session.scalars(select(Alert.kind).where(Alert.series == name)).all()
    assert kinds == ["change-point"]


def test_a_watch_searches_the_newest_runs_at_a_bounded_alpha_after_the_run_is_released(
    made: Fixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review of issue 51, finding 1: a server's watch searches only the newest
    ``SEARCHED_RUNS`` runs, at the change points' floor when the threshold's alpha is under
    it, with a deadline; and the run pool watches after the run's slot is released, so
    ``close`` and ``drain`` never wait on it."""
    import threading

    from pinbench.api import runpool
    from pinbench.series import watch
    from pinbench.series.members import resolve
    from pinbench.series.stats import Threshold
    from pinbench.series.thresholds import set_threshold

    ws = made.ws
    rng = np.random.default_rng(9)
    old = lock(ws, "1.0.0")
    runs = [record(ws, old, 60 + i, latencies(rng, 100_000), system="lab-c") for i in range(8)]
    key, members = resolve(ws, SERIES[:-1] + "lab-c")
    metric = "framework_latency_p50_ns"
    tiny = Threshold(metric=metric, test="t", direction="lower", alpha=1e-12, window=5)
    set_threshold(ws, key, members, tiny, by="test")
    seen: list[tuple[int, float, float | None]] = []

    def spy(values: list[float], *, significance: float, deadline: float | None = None) -> list:  # type: ignore[type-arg]
        seen.append((len(values), significance, deadline))
        return []

    monkeypatch.setattr(watch, "SEARCHED_RUNS", 5)
    monkeypatch.setattr(watch, "change_points", spy)
    watch.watch_quietly(ws, runs[-1])
    ((n, significance, deadline),) = seen
    assert (n, significance) == (5, 0.001) and deadline is not None

    released: list[bool] = []
    done = threading.Event()

    def watched(_ws: Workspace, run_id: str) -> None:
        with pool._lock:
            released.append(run_id not in pool._mine and run_id not in pool._stops)
        done.set()

    monkeypatch.setattr(runpool, "run_lockfile", lambda *args, **kwargs: None)
    monkeypatch.setattr(runpool, "watch_quietly", watched)
    pool = runpool.RunPool(ws, workers=1, queue=1)
    try:
        pool.submit(old, "local")
        assert done.wait(30)
    finally:
        pool.close()
    assert released == [True]


def test_runs_with_other_settings_cannot_shift_a_series_baseline(made: Fixture) -> None:
    """Review of issue 51, finding 2: runs of the same six fields but other threads (or runner,
    framework name, limits) are not in a candidate's window: a 40 % regression stays one."""
    from pinbench.series.gate import gate
    from pinbench.series.members import resolve
    from pinbench.series.stats import Threshold
    from pinbench.series.thresholds import set_threshold

    ws = made.ws
    rng = np.random.default_rng(2)
    team, other = lock(ws, "1.0.0"), lock(ws, "1.0.0", threads=1)
    ours = [record(ws, team, 70 + i, latencies(rng, 100_000), system="lab-d") for i in range(6)]
    for i in range(6):
        record(ws, other, 80 + i, latencies(rng, 150_000), system="lab-d")
    key, members = resolve(ws, SERIES[:-1] + "lab-d")
    metric = "framework_latency_p50_ns"
    relative = Threshold(metric=metric, test="relative", direction="lower", max_change=0.05)
    set_threshold(ws, key, members, relative, by="team")
    candidate = record(ws, team, 90, latencies(rng, 140_000), system="lab-d")
    result = gate(ws, candidate, alert=False)
    assert result.outcome == "regressed" and result.history == ours


def test_a_candidate_a_gate_found_regressed_is_never_the_next_gates_baseline(
    made: Fixture,
) -> None:
    """A user trial's finding: a pull request's slower model, gated on every push, filled the
    window with its own rejected runs and passed the third time. Each run a gate found
    regressed is left out of later windows (named in ``left_out``); runs with other settings
    are counted by runner, never compared."""
    from pinbench.series.alerts import regressed_runs
    from pinbench.series.gate import gate, judge
    from pinbench.series.members import resolve
    from pinbench.series.stats import Threshold
    from pinbench.series.thresholds import set_threshold, thresholds

    ws = made.ws
    rng = np.random.default_rng(7)
    team = lock(ws, "1.0.0")
    base = [record(ws, team, 100 + i, latencies(rng, 100_000), system="lab-r") for i in range(6)]
    record(ws, lock(ws, "1.0.0", threads=1), 106, latencies(rng, 100_000), system="lab-r")
    key, members = resolve(ws, SERIES[:-1] + "lab-r")
    metric = "framework_latency_p50_ns"
    bound = Threshold(metric=metric, test="relative", direction="lower", max_change=0.05, window=3)
    set_threshold(ws, key, members, bound, by="team")
    slower = []
    for i in range(4):
        slower.append(record(ws, team, 110 + i, latencies(rng, 150_000), system="lab-r"))
        result = gate(ws, slower[-1])
        assert result.outcome == "regressed", (i, result.to_json())
        assert result.history == base and result.left_out == slower[:-1]
        assert result.other_settings == {"local": 1}
    assert regressed_runs(ws, str(key)) == set(slower)
    _, members = resolve(ws, str(key))
    without = judge(key, members, slower[-1], thresholds(ws, key), lambda d: [])
    assert without.outcome == "passed"  # what the window of its own rejected runs said
    info = result.to_json()
    assert info["left_out"] == slower[:3] and info["other_settings"] == {"local": 1}


def test_a_gate_reads_each_runs_latencies_once(
    made: Fixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review of issue 51, finding 3: two raw thresholds over the same window read each run's
    latency blob once a gate call (as a list of floats), not once a threshold; they are the
    values NumPy reads of the blob."""
    from pinbench.evaluator.records import run_blobs
    from pinbench.series import gate as gate_module
    from pinbench.series.gate import gate
    from pinbench.series.members import resolve
    from pinbench.series.stats import Threshold
    from pinbench.series.thresholds import set_threshold

    ws = made.ws
    rng = np.random.default_rng(4)
    old = lock(ws, "1.0.0")

    def one(minute: int) -> str:
        raw = latencies(rng, 100_000)
        mean = {"framework_latency_mean_ns": float(np.mean(raw))}
        return record(ws, old, minute, raw, system="lab-e", extra=mean)

    runs = [one(100 + i) for i in range(4)]
    key, members = resolve(ws, SERIES[:-1] + "lab-e")
    for metric in ("framework_latency_p50_ns", "framework_latency_mean_ns"):
        threshold = Threshold(metric=metric, test="t", direction="lower", window=5)
        set_threshold(ws, key, members, threshold, by="test")
    candidate = one(110)
    reads: list[str] = []
    real = gate_module.latencies

    def counted(ws: Workspace, digest: str) -> list[float]:
        reads.append(digest)
        return real(ws, digest)

    monkeypatch.setattr(gate_module, "latencies", counted)
    result = gate(ws, candidate, alert=False)
    assert len(result.judged) == 2 and result.history == runs
    assert len(reads) == len(set(reads)) == 5
    for digest in reads:
        want = run_blobs.latencies_of(ws, digest).astype(np.float64).tolist()
        assert real(ws, digest) == want and len(want) == 200


def test_unsandboxed_runs_are_no_change_point(made: Fixture) -> None:
    """Issue 84, item 5: runs that ran UNSANDBOXED (their figures their own word) are left
    out of the change-point search as INVALID runs are: six of them 40 % slower after six
    sandboxed runs raise no alert, where six sandboxed ones do."""
    from pinbench.series.members import resolve
    from pinbench.series.stats import Threshold
    from pinbench.series.thresholds import set_threshold
    from pinbench.series.watch import watch_run

    rng = np.random.default_rng(84)
    ws = made.ws
    old = lock(ws, "1.0.0")
    loose = {"unsandboxed_bool": 1.0}
    runs = [record(ws, old, 60 + i, latencies(rng, 100_000), system="lab-u") for i in range(6)]
    runs += [
        record(ws, old, 70 + i, latencies(rng, 140_000), system="lab-u", extra=loose)
        for i in range(6)
    ]
    key, members = resolve(ws, SERIES[:-1] + "lab-u")
    metric = "framework_latency_p50_ns"
    threshold = Threshold(metric=metric, test="relative", direction="lower", max_change=0.05)
    set_threshold(ws, key, members, threshold, by="test")
    assert watch_run(ws, runs[-1]) == []
    runs += [record(ws, old, 80 + i, latencies(rng, 140_000), system="lab-u") for i in range(6)]
    (alert,) = watch_run(ws, runs[-1])  # the same shift in sandboxed runs is one
    assert alert["run"] == runs[12]


def test_gating_an_old_run_records_no_alert_unless_the_caller_publishes(made: Fixture) -> None:
    """Review of issue 51, finding 5: a regressed gate of a run that is not the newest of its
    series answers without recording an alert; the newest run's does record one, and a caller
    whose ``alert_past`` grants the model records one for an old run too."""
    from pinbench.series.gate import gate
    from pinbench.series.members import resolve
    from pinbench.series.stats import Threshold
    from pinbench.series.thresholds import set_threshold

    ws = made.ws
    rng = np.random.default_rng(6)
    old = lock(ws, "1.0.0")
    base = [record(ws, old, 120 + i, latencies(rng, 100_000), system="lab-f") for i in range(4)]
    slow = record(ws, old, 130, latencies(rng, 150_000), system="lab-f")
    newest = record(ws, old, 131, latencies(rng, 150_000), system="lab-f")
    name = SERIES[:-1] + "lab-f"
    key, members = resolve(ws, name)
    metric = "framework_latency_p50_ns"
    threshold = Threshold(metric=metric, test="relative", direction="lower", max_change=0.05)
    set_threshold(ws, key, members, threshold, by="team")

    def alerted() -> list[str]:
        with ws.transaction() as session:
            return list(session.scalars(select(Alert.run_id).where(Alert.series == name)))

    asked: list[str] = []

    def no(model: str) -> bool:
        asked.append(model)
        return False

    assert gate(ws, slow, alert_past=no).outcome == "regressed" and alerted() == []
    assert asked == ["vision/digits-logreg"] and gate(ws, base[-1]).outcome == "passed"
    assert gate(ws, newest).outcome == "regressed" and alerted() == [newest]
    assert gate(ws, slow, alert_past=lambda model: True).outcome == "regressed"
    assert sorted(alerted()) == sorted([newest, slow])


def test_one_shift_is_one_change_point_alert_as_the_series_grows(made: Fixture) -> None:
    """Review of issue 51, finding 6: a +5 % shift at run 15 is placed at run 13 after 21
    runs and at run 11 after 34 (E-Divisive's split moves as the series grows); the second is
    inside the first's segments, so it is the same shift: one alert, not two."""
    from pinbench.series.members import resolve
    from pinbench.series.stats import Threshold
    from pinbench.series.thresholds import set_threshold
    from pinbench.series.watch import watch_run

    ws = made.ws
    rng = np.random.default_rng(9)  # the review's cp6.py series
    x = np.round(1000 * np.concatenate([rng.normal(100, 3, 15), rng.normal(105, 3, 25)]))
    old = lock(ws, "1.0.0")
    runs = [record(ws, old, 200 + i, [v], system="lab-g") for i, v in enumerate(x[:21])]
    key, members = resolve(ws, SERIES[:-1] + "lab-g")
    metric = "framework_latency_p50_ns"
    threshold = Threshold(metric=metric, test="relative", direction="lower", max_change=0.05)
    set_threshold(ws, key, members, threshold, by="team")
    (first,) = watch_run(ws, runs[-1])
    assert first["run"] == runs[13]
    runs += [record(ws, old, 200 + i, [v], system="lab-g") for i, v in enumerate(x[21:34], 21)]
    assert watch_run(ws, runs[-1]) == []  # found at run 11 now: the same shift
    with ws.transaction() as session:
        alerted = session.scalars(select(Alert.run_id).where(Alert.series == str(key))).all()
    assert alerted == [runs[13]]


def test_the_same_finding_is_one_alert_even_when_two_writers_race(made: Fixture) -> None:
    """Review of issue 51, finding 7: the alerts table holds one row per series, metric, kind
    and run (``uq_alerts_finding``); writers racing to record the same finding (two threads,
    released together) each get the one row back instead of a second alert or an error, and
    a later writer gets the first one's row, its detail unchanged."""
    import threading

    from pinbench.db.errors import Conflict
    from pinbench.series import alerts

    ws = made.ws
    finding = {"series": "race:d:Offline:accuracy:b1:-", "metric": "m", "kind": "regression"}
    start, got = threading.Barrier(2), []

    def writer(n: int) -> None:
        start.wait()
        got.append(alerts.raise_alert(ws, **finding, run_id="r" * 36, detail={"n": n}))

    threads = [threading.Thread(target=writer, args=(n,)) for n in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 2 and got[0]["id"] == got[1]["id"] and got[0]["detail"] == got[1]["detail"]
    again = alerts.raise_alert(ws, **finding, run_id="r" * 36, detail={"n": 3})
    assert again["id"] == got[0]["id"] and again["detail"] == got[0]["detail"] != {"n": 3}
    with pytest.raises(Conflict), ws.transaction() as session:
        session.add(Alert(**finding, run_id="r" * 36, detail={}, state="open",
                          created_at=datetime.now(UTC)))  # fmt: skip
    with ws.transaction() as session:
        count = session.scalar(select(func.count()).where(Alert.series == finding["series"]))
    assert count == 1


def test_the_gate_judges_several_runs_of_one_candidate_and_refuses_a_mismatched_one(
    made: Fixture, cli: Cli, tmp_path: Path
) -> None:
    """Decision 264: ``--run`` given three times judges three runs of one lockfile together
    (Student's t of their figures against the window's, Welch's t on their latencies, both
    scipy's); a run of another lockfile, of another series, given twice, or more runs than
    the bound are refused naming what is wrong, before anything is judged."""
    from scipy import stats as scipy_stats

    ws = made.ws
    rng = np.random.default_rng(64)
    old, new = lock(ws, "1.0.0"), lock(ws, "1.1.0")

    def one(locked: Any, minute: int, median: float) -> str:
        raw = latencies(rng, median * float(np.exp(rng.normal(0.0, 0.01))))
        return record(ws, locked, minute, raw, system="lab-h")

    past = [one(old, 300 + i, 100_000) for i in range(6)]
    cands = [one(new, 310 + i, 106_000) for i in range(3)]
    other = one(old, 320, 100_000)
    name = SERIES[:-1] + "lab-h"
    set_ = ("series", "threshold", "set", name, "framework_latency_p50_ns", "--test", "t")
    assert cli(*set_).code == 0
    runs = [arg for c in reversed(cands) for arg in ("--run", c[:12])]  # prefixes, any order
    summary = tmp_path / "k.md"
    gated = cli("gate", *runs, "--json", "--markdown", str(summary))
    assert gated.code == 1, gated.err
    info = json.loads(gated.out)
    assert info["runs"] == cands and info["run"] == cands[-1] and info["history"] == past
    (c,) = info["comparisons"]
    figures = [_p50(ws, r) for r in past]
    ran = [_p50(ws, r) for r in cands]
    assert c["candidates"] == ran and c["candidate"] == float(np.median(ran))
    want = scipy_stats.ttest_ind(ran, figures, equal_var=True, alternative="greater").pvalue
    assert c["run_p_value"] == pytest.approx(float(want), rel=1e-12) and c["verdict"] == "regressed"
    pooled = [np.concatenate([_raw(ws, r) for r in rs]) for rs in (cands, past)]
    welch = scipy_stats.ttest_ind(*pooled, equal_var=False, alternative="greater").pvalue
    assert c["p_value"] == pytest.approx(float(welch), rel=1e-9)
    markdown = summary.read_text()
    assert "3 runs of one lockfile" in markdown and all(r in markdown for r in cands)

    for argv, named in (
        ((*runs, "--run", other), f"run {other[:8]} ran lockfile"),
        ((*runs, "--run", made.same), f"run {made.same[:8]} belongs to series {SERIES}"),
        ((*runs, "--run", cands[0]), f"run {cands[0][:8]} is given twice"),
        (tuple(a for c in [cands[0]] * 21 for a in ("--run", c)), "--run (given that many"),
        (("--run", cands[0], "--repeat", "2"), "--repeat runs the LOCKFILE"),
        (
            (str(tmp_path / "never-read.lock"), "--repeat", "21"),
            "--repeat must be between 1 and 20, got 21",
        ),
        (
            (str(tmp_path / "never-read.lock"), "--repeat", "0"),
            "--repeat must be between 1 and 20, got 0",
        ),
    ):
        refused = cli("gate", *argv, "--json")
        assert refused.code == 1 and named in refused.err, (argv, refused.err)
        assert refused.out == ""  # no gate object: refused, not judged


def _p50(ws: Workspace, run_id: str) -> float:
    from pinbench.db.models import Result

    with ws.transaction() as session:
        value = session.scalar(
            select(Result.value).where(
                Result.run_id == run_id, Result.metric == "framework_latency_p50_ns"
            )
        )
    assert value is not None
    return float(value)


def _raw(ws: Workspace, run_id: str) -> np.ndarray:
    from pinbench.db.models import Run as RunRow
    from pinbench.evaluator.run import latencies_of

    with ws.transaction() as session:
        digest = session.scalar(select(RunRow.latencies_sha256).where(RunRow.id == run_id))
    assert digest is not None
    return latencies_of(ws, digest).astype(np.float64)


def test_an_inconclusive_gate_of_k_runs_names_the_repeat_that_would_settle_it() -> None:
    """The text and Markdown views list every candidate run; "about N more runs" becomes the
    ``--repeat`` that would hold them (K + N), or says it is past the bound of 20."""
    from pinbench.cli.gate_view import lines_of, markdown_of

    threshold: dict[str, Any] = {"version": 1, "direction": "lower", "max_change": 0.05}
    threshold |= {"alpha": 0.01, "tolerance": None, "window": 10, "min_runs": 3}
    base: dict[str, Any] = {"metric": "m", "verdict": "inconclusive", "test": "t", "baseline": 1.0}
    base |= {"candidate": 1.1, "change": 0.1, "p_value": 0.02, "alpha": 0.01, "runs_used": 10}
    info: dict[str, Any] = {"series": "s", "run": "c" * 36, "runs": ["a" * 36, "b" * 36, "c" * 36]}
    info |= {"outcome": "inconclusive", "exit_code": 2, "history": ["h"] * 10}
    for more, said in ((4, "(gate --repeat 7)"), (18, "(over the 20 a gate takes)")):
        comparison = {**base, "reruns_needed": more, "reason": "r", "threshold": threshold}
        text = lines_of({**info, "comparisons": [comparison]})
        assert text[0].startswith("gate: runs aaaaaaaa, bbbbbbbb, cccccccc against 10")
        assert text[-1].endswith(f"m: about {more} more run(s) of the candidate {said}")
        markdown = markdown_of({**info, "comparisons": [comparison]})
        assert "3 runs of one lockfile (`" + "a" * 36 + "`" in markdown


def test_a_run_recorded_in_a_local_home_is_searched_for_change_points(
    made: Fixture, cli: Cli, tmp_path: Path
) -> None:
    """A user trial's finding: change points were searched only on a server. ``pinbench run``
    in a local home searches the run's series as a server does and says each alert it raised:
    here six runs at 100 ms, then real runs of the same lockfile (tens of microseconds)."""
    from pinbench.series.members import resolve
    from pinbench.series.stats import Threshold
    from pinbench.series.thresholds import set_threshold

    ws = made.ws
    rng = np.random.default_rng(11)
    team = lock(ws, "1.0.0", threads=2, scenario={"min_duration_ms": 200, "min_query_count": 64})
    for i in range(6):
        record(ws, team, 200 + i, latencies(rng, 100_000_000))
    key, members = resolve(ws, SERIES)
    metric = "framework_latency_p50_ns"
    bound = Threshold(
        metric=metric, test="relative", direction="lower", max_change=0.33, alpha=0.05
    )
    set_threshold(ws, key, members, bound, by="team")
    path = tmp_path / "team.lock"
    team.write(path)
    said = [cli("run", str(path), "--runner", "local") for _ in range(4)]
    assert all(r.code == 0 for r in said), [r.err for r in said]
    shifted = [i for i, r in enumerate(said) if f"{metric} shifted -" in r.out + r.err]
    assert shifted in ([1], [2]), [r.out + r.err for r in said]  # said once, never again
    alerts = json.loads(cli("series", "alerts", "--series", SERIES, "--json").out)
    found = [a for a in alerts if a["kind"] == "change-point" and a["metric"] == metric]
    assert len(found) == 1 and found[0]["detail"]["change"] < -0.9


def test_a_threshold_is_retired_by_a_new_version_and_set_again_after(
    made: Fixture, cli: Cli
) -> None:
    """A user trial's finding: a threshold could not be retired. ``threshold retire`` adds a
    version that retires it: the series no longer judges the metric (a gate with no other
    threshold is refused), every version stays listed, and setting it again adds the next."""
    rng = np.random.default_rng(5)
    team = lock(made.ws, "1.0.0")
    runs = [
        record(made.ws, team, 300 + i, latencies(rng, 100_000), system="lab-t") for i in range(4)
    ]
    name = SERIES[:-1] + "lab-t"
    metric = "framework_latency_p50_ns"
    never = cli("series", "threshold", "retire", name, metric)
    assert never.code == 1 and "has no threshold on" in never.err
    set_ = ("series", "threshold", "set", name, metric, "--test", "relative", "--max-change", "0.1")
    assert cli(*set_).code == 0
    assert cli("gate", "--run", runs[-1]).code == 0
    retired = cli("series", "threshold", "retire", name, metric, "--json")
    assert retired.code == 0, retired.err
    assert json.loads(retired.out)["version"] == 2 and json.loads(retired.out)["test"] == "retired"
    again = cli("series", "threshold", "retire", name, metric)
    assert again.code == 1 and "a retired (v2) threshold" in again.err
    assert json.loads(cli("series", "threshold", "list", name, "--json").out) == []
    every = json.loads(cli("series", "threshold", "list", name, "--all", "--json").out)
    assert [(t["version"], t["test"]) for t in every] == [(1, "relative"), (2, "retired")]
    judged = cli("gate", "--run", runs[-1])
    assert judged.code == 1 and "has no thresholds" in judged.err
    assert cli(*set_).code == 0
    assert [
        t["version"] for t in json.loads(cli("series", "threshold", "list", name, "--json").out)
    ] == [3]


def test_only_the_newest_runs_of_a_series_are_alerted_and_left_out_of_later_windows(
    made: Fixture,
) -> None:
    """The review of decision 273: a gate's candidates are never a baseline again once alerted,
    so a caller who may only run must not get a team's earlier good runs alerted by judging
    them with slow runs of their own. A regression is recorded (and its runs left out) only
    when the candidates are the newest runs of their series."""
    from pinbench.series.alerts import regressed_runs
    from pinbench.series.gate import gate
    from pinbench.series.members import resolve
    from pinbench.series.stats import Threshold
    from pinbench.series.thresholds import set_threshold

    ws = made.ws
    rng = np.random.default_rng(13)
    team = lock(ws, "1.0.0")
    good = [record(ws, team, 500 + i, latencies(rng, 100_000), system="lab-q") for i in range(6)]
    slow = [record(ws, team, 510 + i, latencies(rng, 200_000), system="lab-q") for i in range(3)]
    key, members = resolve(ws, SERIES[:-1] + "lab-q")
    metric = "framework_latency_p50_ns"
    bound = Threshold(metric=metric, test="relative", direction="lower", max_change=0.05)
    set_threshold(ws, key, members, bound, by="team")
    mixed = gate(ws, [good[-1], slow[1], slow[2]])  # a team run judged with newer slow ones
    assert mixed.outcome == "regressed" and regressed_runs(ws, str(key)) == set()
    tail = gate(ws, slow[1:])
    assert tail.outcome == "regressed" and regressed_runs(ws, str(key)) == set(slow[1:])
    assert good[-1] in gate(ws, slow[1:]).history


def test_invalid_runs_are_no_baseline_unless_asked_and_are_marked(made: Fixture, cli: Cli) -> None:
    """Issue 64, item 6: a run LoadGen called INVALID (too few queries, too short) is not a
    result. A gate leaves such runs out of its window unless asked (``--include-invalid``),
    names an INVALID candidate, and ``series show`` marks every figure of one; the change
    points are searched without them."""
    from pinbench.series.members import resolve
    from pinbench.series.stats import Threshold
    from pinbench.series.thresholds import set_threshold

    ws = made.ws
    rng = np.random.default_rng(64)
    team = lock(ws, "1.0.0")
    ok, bad = {"loadgen_valid_bool": 1.0}, {"loadgen_valid_bool": 0.0}
    busy = {**ok, "contended_bool": 1.0, "machine_others_cpu_ratio": 0.4}
    loose = {**ok, "unsandboxed_bool": 1.0}  # issue 71: --sandbox none, marked in a gate too
    extras = [ok, ok, loose, busy]
    valid = [
        record(ws, team, 200 + i, latencies(rng, 100_000), system="lab-v", extra=extras[i])
        for i in range(4)
    ]
    invalid = [
        record(ws, team, 210 + i, latencies(rng, 150_000), system="lab-v", extra=bad)
        for i in range(3)
    ]
    candidate = record(ws, team, 220, latencies(rng, 150_000), system="lab-v", extra=ok)
    name = SERIES[:-1] + "lab-v"
    key, members = resolve(ws, name)
    metric = "framework_latency_p50_ns"
    bound = Threshold(metric=metric, test="relative", direction="lower", max_change=0.05, window=3)
    set_threshold(ws, key, members, bound, by="team")

    judged = cli("gate", "--run", candidate, "--json")
    info = json.loads(judged.out)
    assert judged.code == 1 and info["outcome"] == "regressed", info  # against valid runs
    sandboxed = [valid[0], valid[1], valid[3]]
    assert info["history"] == sandboxed and info["invalid"] == invalid
    text = cli("gate", "--run", candidate)
    assert "3 earlier run(s) LoadGen called INVALID are left out" in text.out, text.out
    # a run timed on a busy machine (item 7) is compared, and said
    assert info["contended"] == [valid[3]]
    assert f"timed while other work took the machine ({valid[3][:8]})" in text.out, text.out
    # an UNSANDBOXED run (issue 84, item 5) is left out as an INVALID one is, and said
    assert info["unsandboxed_left_out"] == [valid[2]] and info["unsandboxed"] == []
    assert "1 earlier run(s) that ran UNSANDBOXED are left out" in text.out, text.out
    loose_too = json.loads(cli("gate", "--run", candidate, "--include-unsandboxed", "--json").out)
    assert loose_too["history"] == valid and loose_too["unsandboxed"] == [valid[2]]
    assert loose_too["include_unsandboxed"] is True and loose_too["unsandboxed_left_out"] == []
    compared = cli("gate", "--run", candidate, "--include-unsandboxed").out
    assert f"were UNSANDBOXED ({valid[2][:8]})" in compared, compared

    asked = cli("gate", "--run", candidate, "--include-invalid", "--json")
    info = json.loads(asked.out)
    assert asked.code == 0 and info["outcome"] == "passed", info  # the slow INVALID window
    assert info["history"] == sandboxed + invalid and info["invalid"] == []
    assert info["include_invalid"] is True
    from pinbench.series.alerts import regressed_runs

    before = regressed_runs(ws, name)
    slower = record(ws, team, 230, latencies(rng, 400_000), system="lab-v", extra=ok)
    judged = json.loads(cli("gate", "--run", slower, "--include-invalid", "--json").out)
    assert judged["outcome"] == "regressed"  # against the INVALID window too, yet ...
    assert regressed_runs(ws, name) == before  # ... no alert: that window is no result

    named = json.loads(cli("gate", "--run", invalid[-1], "--json").out)
    assert named["invalid_candidates"] == [invalid[-1]]

    shown = cli("series", "show", name, "--metric", metric)
    assert shown.code == 0, shown.err
    rows = {line.split()[0]: line for line in shown.out.splitlines()[2:] if line.strip()}
    assert all("INVALID" in rows[r[:8]] for r in invalid)
    assert not any("INVALID" in rows[r[:8]] for r in [*valid, candidate])
    assert "BUSY" in rows[valid[3][:8]] and "BUSY" not in rows[valid[0][:8]]
    assert "UNSANDBOXED" in rows[valid[2][:8]] and "UNSANDBOXED" not in rows[valid[0][:8]]
    points = json.loads(cli("series", "show", name, "--json").out)["points"]
    assert [p["invalid"] for p in points] == [False] * 4 + [True] * 3 + [False] * 2


def test_a_plots_axis_names_the_measured_range_in_full() -> None:
    """Issue 64, item 10 (the series page): the axis read ``-25.16`` under latencies that are
    never negative (the plot's padding) and ``003e+04`` (1.003e+04 cut at the left edge)."""
    from pinbench.series.plot import series_svg

    svg = series_svg("throughput_sps", [10_030.0, 25_000.5, 9_000.0], ["a", "b", "c"])
    axis = re.findall(r'text-anchor="end" font-size="10">([^<]*)<', svg)
    assert axis == ["25,000", "9,000"]  # the largest and smallest measured, no exponent
    low = series_svg("latency_p50_ns", [1295.0, 40.6, 41.0], ["a", "b", "c"])
    assert re.findall(r'font-size="10">([^<]*)<', low) == ["1,295", "40.6"]

"""The gate's JSON object (``Registry.series().gate``) as text and as a Markdown summary for
a CI job summary or a pull-request comment: pure views of what the API answered."""

from __future__ import annotations

from typing import Any

from pinbench.sdk.series import most_candidates

MARK = {"passed": "✅", "regressed": "❌", "inconclusive": "⚠️"}


def lines_of(info: dict[str, Any]) -> list[str]:
    """A gate's JSON object as plain text: one line per metric, then the outcome."""
    runs = _runs(info)
    shown = ", ".join(r[:8] for r in runs)
    out = [
        f"gate: run{'s' if len(runs) > 1 else ''} {shown} against {len(info['history'])} "
        f"earlier run(s) of {info['series']}"
    ]
    out.extend(f"  ({note})" for note in window_notes(info))
    for c in info["comparisons"]:
        out.append(f"  {c['verdict']:<12} {c['reason']} [threshold v{c['threshold']['version']}]")
    settle = settle_of(info)
    out.append(info["outcome"] + (f" - to settle: {settle}" if settle else ""))
    return out


def markdown_of(info: dict[str, Any]) -> str:
    """A gate's JSON object as a summary for a CI job summary or a pull-request comment."""
    rows = [
        f"### {MARK[info['outcome']]} pinbench gate: {info['outcome']}",
        "",
        f"{_candidates(_runs(info))} against {len(info['history'])} earlier run(s) of series "
        f"`{info['series']}`" + "".join(f"; {note}" for note in window_notes(info)) + ".",
        "",
        "| metric | verdict | test | baseline | candidate | change (+ worse) | p-value | "
        "threshold |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in info["comparisons"]:
        change = c["change"]
        rows.append(
            f"| `{c['metric']}` | {MARK[c['verdict']]} {c['verdict']} | {c['test']} | "
            f"{_num(c['baseline'])} | {_num(c['candidate'])} | "
            f"{'-' if change is None else f'{change:+.2%}'} | "
            f"{_p_values(c)} | {_bound(c)} |"
        )
    rows.append("")
    rows.extend(f"- {c['reason']}" for c in info["comparisons"])
    settle = settle_of(info)
    if settle:
        rows.extend(["", f"To settle it: {settle}."])
    return "\n".join(rows) + "\n"


RUN_NOTES = (
    ("invalid_candidates", "LoadGen called candidate run(s) {ids} INVALID: their numbers are "
     "not a valid result"),
    ("contended", "{n} compared run(s) were timed while other work took the machine ({ids}): "
     "their timings may carry it"),
    ("unsandboxed", "{n} compared run(s) were UNSANDBOXED ({ids}): code or the model's own "
     "operations ran outside the sandbox (--sandbox none), their figures are their own word"),
    ("invalid", "{n} earlier run(s) LoadGen called INVALID are left out of the window "
     "(--include-invalid compares them)"),
    ("unsandboxed_left_out", "{n} earlier run(s) that ran UNSANDBOXED are left out of the "
     "window (--include-unsandboxed compares them)"),
    ("left_out", "{n} earlier run(s) a gate found regressed are left out of the window"),
)  # fmt: skip
"""The gate object's lists of runs, each said in a note when it names any."""


def window_notes(info: dict[str, Any]) -> list[str]:
    """What the window left out, said: runs an earlier gate found regressed, runs LoadGen called
    INVALID, and runs with other settings (a server of an earlier version answers none); and
    an INVALID candidate."""
    notes = []
    for key, said in RUN_NOTES:
        runs = info.get(key) or []
        if runs:
            notes.append(said.format(n=len(runs), ids=", ".join(r[:8] for r in runs)))
    others = info.get("other_settings") or {}
    if others:
        by = ", ".join(f"{runner}: {count}" for runner, count in sorted(others.items()))
        notes.append(
            f"{sum(others.values())} earlier run(s) with other settings (runner, framework, "
            f"threads or limits) are not compared ({by})"
        )
    return notes


def _runs(info: dict[str, Any]) -> list[str]:
    """The candidate runs (a server of an earlier version answers ``run`` alone)."""
    runs: list[str] = info.get("runs") or [info["run"]]
    return runs


def _candidates(runs: list[str]) -> str:
    if len(runs) == 1:
        return f"Run `{runs[0]}`"
    return f"{len(runs)} runs of one lockfile ({', '.join(f'`{r}`' for r in runs)})"


def _p_values(comparison: dict[str, Any]) -> str:
    """The test's p-value, and the run-level one where it differs (a pooled test's verdict needs
    both under alpha: the run-level one is often what left it inconclusive)."""
    p, runs = comparison["p_value"], comparison.get("run_p_value")
    if p is None:
        return "-"
    if runs is None or runs == p:
        return f"{p:.3g}"
    return f"pooled {p:.3g}, runs {runs:.3g}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _bound(comparison: dict[str, Any]) -> str:
    t = comparison["threshold"]
    parts = [f"v{t['version']}", f"{t['direction']} is better"]
    if t["max_change"] is not None:
        parts.append(f"max change {t['max_change']:.1%}")
    if comparison["alpha"] is not None:  # a statistical test's
        parts.append(f"alpha {t['alpha']:g}")
    if t["tolerance"] is not None:
        parts.append(f"tolerance {t['tolerance']:g}")
    parts.append(f"window {t['window']}, min {t['min_runs']}")
    return ", ".join(parts)


def settle_of(info: dict[str, Any]) -> str:
    """What would settle the inconclusive metrics ('' when none is)."""
    said = []
    for c in info["comparisons"]:
        if c["verdict"] != "inconclusive":
            continue
        short = c["threshold"]["min_runs"] - c["runs_used"]
        if short > 0:
            said.append(f"{c['metric']}: {short} more earlier run(s) of the series")
        elif c["reruns_needed"] is None:
            said.append(f"{c['metric']}: reruns would not settle it (the window is too noisy)")
        else:
            more = c["reruns_needed"]
            total = len(_runs(info)) + more
            most = most_candidates()
            how = f"gate --repeat {total}" if total <= most else f"over the {most} a gate takes"
            said.append(f"{c['metric']}: about {more} more run(s) of the candidate ({how})")
    return "; ".join(said)

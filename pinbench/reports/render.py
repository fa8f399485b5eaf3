"""Reports as files: a self-contained HTML page (the plotting scripts inlined) or Markdown."""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

import pinbench
from pinbench.reports.data import Report
from pinbench.reports.hardware import system_label
from pinbench.reports.systems_chart import SYSTEM_LATENCIES
from pinbench.reports.transforms import transform_markdown
from pinbench.reports.view import ReportView, build
from pinbench.run_metrics import headline, kind_label, short_reason
from pinbench.studies import figures as study_figures

TEMPLATES = Path(pinbench.__file__).parent / "templates"
STATIC = Path(pinbench.__file__).parent / "static"
SCRIPTS = ("vega/vega.min.js", "vega/vega-lite.min.js", "vega/vega-embed.min.js", "charts.js")
"""Vega 6.4.0, Vega-Lite 6.4.3, Vega-Embed 7.3.0 (BSD-3-Clause, licences beside them), then
the script that draws the plots."""


@cache
def templates() -> jinja2.Environment:
    """The Jinja environment of the HTML report and the web UI (HTML escaped, undefined
    names are errors)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["system_label"] = system_label
    env.globals["run_kind"] = kind_label
    env.globals["run_headline"] = headline
    env.globals["run_reason"] = short_reason
    env.globals["study_figures"] = study_figures
    return env


@cache
def _inline_scripts() -> tuple[Markup, ...]:
    # An inlined script ends at the first "</script" in its text, whatever the JS meant.
    return tuple(
        Markup((STATIC / name).read_text(encoding="utf-8").replace("</script", "<\\/script"))
        for name in SCRIPTS
    )


STYLES = ("report.css", "vega/vega-tooltip.css")


@cache
def _inline_css() -> Markup:
    css = "\n".join((STATIC / name).read_text(encoding="utf-8") for name in STYLES)
    return Markup(css.replace("</style", ""))


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@cache
def policy() -> str:
    """The HTML report's Content-Security-Policy: its own inlined scripts and style (by their
    sha256) and nothing else; no network at all. The page carries it in a ``<meta>``; served
    over HTTP it is also the header, with ``frame-ancestors 'none'`` (which a meta ignores)."""
    scripts = " ".join(_sha256(js) for js in _inline_scripts())
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src {scripts}",
            f"style-src {_sha256(_inline_css())}",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )


def html(report: Report, title: str | None = None) -> str:
    return html_of(build(report, title))


def html_of(view: ReportView) -> str:
    page = templates().get_template("report/standalone.html.j2")
    return page.render(
        view=view,
        version=pinbench.__version__,
        scripts=_inline_scripts(),
        css=_inline_css(),
        policy=policy(),
    )


MARKDOWN_ESCAPES = str.maketrans(
    {
        **{c: "\\" + c for c in "\\`*_~[]|#!"},
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "\n": " ",
        "\r": " ",
    }
)
"""What Markdown (CommonMark and GitHub's tables) or HTML would read as markup: backslash-
escaped, or as an entity (``<``, ``>``, ``&``); line breaks become spaces (one table row)."""


def md_text(text: str) -> str:
    """``text`` shown as itself in Markdown: no emphasis, link, code, HTML or table cell break."""
    return text.translate(MARKDOWN_ESCAPES)


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(md_text(h) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(md_text(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def _runs_of(point: dict[str, Any]) -> str:
    """A system's runs of a group, those LoadGen called INVALID said (``charts.system_points``)."""
    invalid = point.get("invalid") or 0
    if not invalid:
        return str(point["runs"])
    if invalid >= point["runs"]:
        return f"{point['runs']} INVALID"
    return f"{point['runs']} ({invalid} INVALID left out)"


def _num(value: float | None) -> str:
    from pinbench.metric_names import fmt_sig

    return "" if value is None else fmt_sig(value)


def _operators_md(view: ReportView) -> list[str]:
    ops = view.operators
    if ops is None:
        return []
    head = ["operator", *(["system"] if ops.show_system else [])]
    for f in ops.frameworks:
        head += [f"{f} median", f"{f} GFLOP/s", f"{f} max rel error", f"{f} valid"]
    rows = []
    for row in ops.rows:
        cells = [row.spec, *([row.system] if ops.show_system else [])]
        for c in row.cells:
            if c is None:
                cells += ["", "", "", ""]
            else:
                valid = c.mark + (f" {c.reason}" if c.reason else "")
                cells += [c.median, c.gflops, c.max_rel_error, valid]
        rows.append(cells)
    note = "An invalid result (outside its dtype's tolerance) shows no speed."
    return ["## Operators", "", *_table(head, rows), note, ""]


def _training_md(view: ReportView) -> list[str]:
    if not view.training:
        return []
    head = ["framework", "run", "target top-1", "reached at epoch", "time to accuracy (s)"]
    head += ["eval time (s, excluded)", "samples/s", "final top-1", "weights sha256"]
    rows = [
        [
            *(t.framework, t.run_id[:8], t.target, t.reached, t.time_to_accuracy_s),
            *(t.eval_s, t.samples_per_s, t.final_top1, t.weights),
        ]
        for t in view.training
    ]
    return ["## Training: time to accuracy", "", *_table(head, rows)]


def _distributed_md(view: ReportView) -> list[str]:
    if not view.distributed:
        return []
    head = ["scheme", "workers", "run", "global batch", "bytes/step per worker", "step (ms)"]
    head += ["in collectives", "systems", "samples/s per worker", "time to accuracy (s)"]
    head += ["weights sha256"]
    rows = [
        [
            *(d.scheme, d.workers, d.run_id[:8], d.global_batch, d.bytes_per_step, d.step_ms),
            *(d.collective_share, d.systems, d.samples_per_s_per_worker),
            *(d.time_to_accuracy_s, d.weights),
        ]
        for d in view.distributed
    ]
    return ["## Distributed training: schemes and workers", "", *_table(head, rows)]


def markdown(report: Report, title: str | None = None) -> str:
    view = build(report, title)
    labels = [r["label"] for r in view.runs]
    out = [f"# {md_text(view.title)}", ""]
    out += [f"Made {md_text(view.created_at)} by pinbench {pinbench.__version__}.", ""]
    if view.differs:
        out += [f"**These runs differ in {md_text(', '.join(view.differs))}.**", ""]
    if len(view.systems) > 1:
        hardware = view.hardware_differs
        out += [
            f"**These runs ran on {len(view.systems)} systems ({md_text(', '.join(view.systems))})"
            + (
                f" whose hardware differs in {md_text(', '.join(hardware))}.**"
                if hardware
                else " with the same recorded hardware.**"
            ),
            "",
        ]
    facts = ["system", "status", "model", "framework", "dataset", "image", "scenario", "settings"]
    facts += ["batch_size", "threads", "lockfile"]
    out += ["## Runs", ""]
    out += _table(["", *labels], [[k, *[r[k] for r in view.runs]] for k in facts])
    env = ["runner", "trace", "environment", "python", "host", "started_at", "finished_at"]
    out += ["## Environment", ""]
    out += _table(["", *labels], [[k, *[r[k] for r in view.runs]] for k in env])
    out += ["## Hardware", ""]
    out += _table(
        ["", *labels],
        [[h.fact + (" (differs)" if h.differs else ""), *h.values] for h in view.hardware],
    )
    out += ["## Metrics", ""]
    out += _table(
        ["metric", "unit", *labels], [[m.metric, m.unit, *m.values] for m in view.metrics]
    )
    out += (
        _operators_md(view)
        + _training_md(view)
        + transform_markdown(view.transforms)
        + _distributed_md(view)
    )
    if view.accuracy:
        out += ["## Accuracy vs latency", ""]
        out += _table(
            ["model", "framework", "dataset", "metric", "accuracy", "p50 latency (ms)", "from"],
            [
                [
                    *(p["model"], p["framework"], p["dataset"], p["metric"]),
                    *(f"{p['accuracy']:.4f}", _num(p["latency_p50_ms"]), p["latency_from"]),
                ]
                for p in view.accuracy
            ],
        )
    if view.across_systems:
        out += ["## One model across systems", ""]
        latencies = [f"{q} latency, LoadGen (ms)" for q in SYSTEM_LATENCIES]
        out += _table(
            ["what ran", "system", "runs", *latencies, "throughput, LoadGen (samples/s)"],
            [
                [
                    *(p["group"], p["system"], _runs_of(p)),
                    *(_num(p.get(f"latency_{q}_ms")) for q in SYSTEM_LATENCIES),
                    _num(p.get("throughput_sps")),
                ]
                for p in view.across_systems
            ],
        )
    absent = [f"- {c.title}: {c.reason}" for c in view.charts if c.spec is None]
    captions = [f"- {c.title}: {c.caption}" for c in view.charts if c.spec and c.caption]
    out += ["Plots are in the HTML report (`--html FILE`).", *map(md_text, captions), *absent]
    out += [""]
    if len(view.runs) > 1:
        out += ["## What differs: lockfiles and environments", ""]
        if view.diff:
            out += _table(["path", *labels], [[d.path, *d.values] for d in view.diff])
        else:
            out += ["The runs' lockfiles and environments are identical.", ""]
    return "\n".join(out)

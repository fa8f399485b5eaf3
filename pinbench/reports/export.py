"""Raw results out: one row per query (which run, what ran, the query's latency), as CSV or
Parquet; the Parquet file also carries every run's metrics in its metadata."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from pinbench.errors import UserError
from pinbench.reports.data import Report

COLUMNS = ("run", "model", "framework", "dataset", "scenario", "mode", "batch_size")
COLUMNS_ALL = (*COLUMNS, "query", "latency_ns")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection")."""
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


class ParquetUnavailable(UserError):
    def __init__(self) -> None:
        super().__init__("Parquet export needs pyarrow: pip install pyarrow")


def _columns(report: Report) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS_ALL}
    for run in report.runs:
        if run.latencies_ns is None:
            continue
        n = int(run.latencies_ns.size)
        i = run.info
        for c, v in zip(
            COLUMNS,
            (i["id"], i["model"], i["framework"] or "", i["dataset"], i["scenario"], i["mode"]),
            strict=False,
        ):
            cols[c] += [v] * n
        cols["batch_size"] += [int(i["batch_size"])] * n
        cols["query"] += list(range(n))
        cols["latency_ns"] += run.latencies_ns.tolist()
    return cols


def csv_cell(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula, prefixed with ``'`` (shown as text);
    numbers, and text that is a plain number such as ``-1.5``, unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_bytes(report: Report) -> bytes:
    cols = _columns(report)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS_ALL)
    for row in zip(*(cols[c] for c in COLUMNS_ALL), strict=True):
        writer.writerow([csv_cell(v) for v in row])
    return buf.getvalue().encode()


def parquet_bytes(report: Report) -> bytes:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ParquetUnavailable() from None
    cols = _columns(report)
    types = {"batch_size": pa.int32(), "query": pa.int64(), "latency_ns": pa.int64()}
    table = pa.table({c: pa.array(cols[c], type=types.get(c, pa.string())) for c in COLUMNS_ALL})
    runs = [{k: r.info[k] for k in ("id", "status", "lockfile", "metrics")} for r in report.runs]
    table = table.replace_schema_metadata({"pinbench.runs": json.dumps(runs)})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()

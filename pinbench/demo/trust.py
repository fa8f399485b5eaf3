"""The demo's trust steps (issue 23): every run attested, one attestation written, verified
and refused once tampered with."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from sqlalchemy import func, select

if TYPE_CHECKING:
    from rich.console import Console

    from pinbench.workspace import Workspace


def attest(
    ws: Workspace, workdir: Path, out: Console, step: Callable[[str], None], run_id: str
) -> None:
    """``runs attest RUN -o FILE``, ``attest verify FILE``, then the same with a byte of the
    payload changed."""
    from pinbench.db.models import Attestation, Run
    from pinbench.provenance.attest import attestation_for
    from pinbench.provenance.blobs import store_blobs
    from pinbench.provenance.dsse import read_envelopes
    from pinbench.provenance.keys import known_keys
    from pinbench.provenance.verify import AttestationRefused, verify_envelope

    step(f"pinbench runs attest {run_id[:8]} -o run.intoto.jsonl; pinbench attest verify")
    with ws.transaction() as session:
        runs = session.scalar(select(func.count()).select_from(Run)) or 0
        attested = session.scalar(
            select(func.count(func.distinct(Attestation.run_id))).select_from(Attestation)
        )
    out.print(f"{attested} of {runs} recorded runs carry a signed attestation (DSSE, Ed25519)")
    line, _ = attestation_for(ws, run_id)
    path = workdir / "run.intoto.jsonl"
    path.write_bytes(line)

    digest_of, read = store_blobs(ws)
    keys = known_keys(ws)
    done = verify_envelope(read_envelopes(line, source=str(path))[0], keys, digest_of, read)
    out.print(
        Text(
            f"verified: run {done.run[:8]}, lockfile {done.lockfile[:12]}, key {done.keyid[:12]}; "
            f"subjects match: {', '.join(done.subjects)}",
            style="green",
        )
    )
    envelope = json.loads(line)
    payload = bytearray(base64.b64decode(envelope["payload"]))
    payload[payload.index(b'"status":"succeeded"') + 10] ^= 0x20
    envelope["payload"] = base64.b64encode(bytes(payload)).decode()
    forged = (json.dumps(envelope) + "\n").encode()
    try:
        verify_envelope(read_envelopes(forged, source="forged")[0], keys, digest_of, read)
    except AttestationRefused as exc:
        out.print(Text(f"one payload byte changed -> {exc}", style="yellow"))
    else:
        raise AssertionError("a tampered attestation verified")

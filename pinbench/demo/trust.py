"""The demo's trust steps (issue 23): every run attested, one attestation written, verified
and refused once tampered with."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from pinbench.sdk.errors import AttestationRefused

if TYPE_CHECKING:
    from rich.console import Console

    from pinbench.sdk.registry import Registry


def attest(
    reg: Registry, workdir: Path, out: Console, step: Callable[[str], None], run_id: str
) -> None:
    """``runs attest RUN -o FILE``, ``attest verify FILE``, then the same with a byte of the
    payload changed."""
    step(f"pinbench runs attest {run_id[:8]} -o run.intoto.jsonl; pinbench attest verify")
    runs = reg.runs(limit=None)
    attested = sum(1 for r in runs if r.attestation() is not None)
    out.print(f"{attested} of {len(runs)} recorded runs carry a signed attestation (DSSE, Ed25519)")
    line, _ = reg.attest(run_id)
    path = workdir / "run.intoto.jsonl"
    path.write_bytes(line)

    done = reg.verify_attestation(line, source=str(path))[0]
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
        reg.verify_attestation(forged, source="forged")
    except AttestationRefused as exc:
        out.print(Text(f"one payload byte changed -> {exc}", style="yellow"))
    else:
        raise AssertionError("a tampered attestation verified")

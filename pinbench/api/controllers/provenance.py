"""Signed provenance: the public keys that sign attestations, and a run's attestation."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Response, get, post

from pinbench.accounts import Principal
from pinbench.api.paging import DEFAULT_LIMIT, After, Limit, described, page_listed
from pinbench.api.problems import ApiNotFound
from pinbench.sdk.hosting import Hosting
from pinbench.sdk.registry import Registry

ENVELOPE = "application/vnd.dsse.envelope.v1+json"


class KeyView(msgspec.Struct, frozen=True, kw_only=True):
    keyid: str
    """Ed25519: sha256 of the raw public key; EC: sha256 of its PEM (hex)."""
    purpose: str
    """``attestation`` (signs run attestations) or ``model-signing`` (signs models)."""
    algorithm: str
    """``ed25519`` or ``ecdsa-p256``."""
    state: str
    """``active`` (signs now) or ``retired`` (verifies only what it signed before)."""
    created_at: str
    retired_at: str | None
    public: str
    """Hex: the raw Ed25519 key, 64 digits (``attest verify --key`` takes it), or an EC key's
    DER SubjectPublicKeyInfo."""
    pem: str
    """The public key as PEM (``model_signing verify key --public_key`` takes it)."""
    owner: str


class KeyController(Controller):
    path = "/api/v1/keys"
    tags = ["provenance"]  # noqa: RUF012

    @get(
        "/",
        sync_to_thread=True,
        summary="This registry's public keys: attestation and model-signing, active and retired",
        description="By purpose, oldest first. " + described("keys", "keyid"),
    )
    def list_keys(
        self,
        hosted: Hosting,
        principal: Principal,
        limit: Limit = DEFAULT_LIMIT,
        after: After = None,
    ) -> list[KeyView]:
        principal.require("read")
        keys = hosted.signing_keys()
        kept = page_listed(keys, id_of=lambda k: str(k["keyid"]), limit=limit, after=after)
        return [KeyView(**k) for k in kept]


class AttestationController(Controller):
    path = "/api/v1/runs/{run_id:str}/attestation"
    tags = ["provenance"]  # noqa: RUF012

    @get(
        "/",
        sync_to_thread=True,
        media_type=ENVELOPE,
        summary="A run's signed provenance (DSSE envelope over an in-toto Statement)",
        description="404 when the run has none yet: POST makes one after the fact.",
    )
    def show(self, hosted: Hosting, principal: Principal, run_id: str) -> Response[Any]:
        principal.require("read")
        line = hosted.recorded_attestation(run_id)
        if line is None:
            raise ApiNotFound(
                f"run {run_id} has no attestation yet: POST this URL to attest it after the fact"
            )
        return Response(line, media_type=ENVELOPE)

    @post(
        "/",
        sync_to_thread=True,
        media_type=ENVELOPE,
        status_code=201,
        summary="Attest a finished run after the fact (marked as such)",
        description="Needs the `run` scope. Signed with the server's key; the statement's "
        "internalParameters.attested is 'after the fact'. Nothing about the run changes. "
        "201 with the new envelope; 200 with the recorded one when the run has one already.",
    )
    def attest(self, registry: Registry, principal: Principal, run_id: str) -> Response[Any]:
        principal.require("run")
        line, made = registry.attest(run_id)  # one per run: a second POST returns it
        return Response(line, media_type=ENVELOPE, status_code=201 if made else 200)

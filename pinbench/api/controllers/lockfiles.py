"""Resolution and lockfiles: resolve specs, lock a request, store and download lockfiles."""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
import msgspec
from litestar import Controller, MediaType, Request, Response, get, post, put
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Parameter

from pinbench.accounts import Principal
from pinbench.api.cache import ReadCache
from pinbench.api.code_scope import check_lockfile_code, check_request_code
from pinbench.api.immutable import headers_for, not_modified
from pinbench.api.schemas import Locked, LockPoint, ResolvedRef
from pinbench.sdk.hosting import Hosting
from pinbench.sdk.registry import Registry
from pinbench.sdk.values import Digest, Spec

LOCKFILE_MAX_BYTES = 1024 * 1024


class ResolveController(Controller):
    path = "/api/v1/resolve"
    tags = ["resolution"]  # noqa: RUF012

    @get(
        "/",
        summary="Resolve KIND/NAME@RANGE specs to versions",
        responses={
            200: ResponseSpec(
                list[ResolvedRef], description="The versions picked", generate_examples=False
            )
        },
    )
    async def resolve(
        self,
        registry: Registry,
        principal: Principal,
        spec: Annotated[
            list[str],
            Parameter(description="KIND/NAME@RANGE, repeated", min_items=1, max_items=32),
        ],
        cache: ReadCache,
        arch: str = "amd64",
        device: str = "cpu",
    ) -> Response[bytes]:
        principal.require("read")
        parsed = [str(Spec.parse(s)) for s in spec]
        platform = f"{arch}/{device}"

        def compute() -> bytes:
            refs = registry.resolve(parsed, arch=arch, device=device)
            return msgspec.json.encode([ResolvedRef(**r) for r in refs])

        key = ("resolve", platform, *parsed)
        body = cache.hit(key)  # a cached answer is sent from the event loop
        if body is None:
            body = await anyio.to_thread.run_sync(lambda: cache.answer(key, compute))
        return Response(body, media_type=MediaType.JSON)


class LockfileController(Controller):
    path = "/api/v1/lockfiles"
    tags = ["lockfiles"]  # noqa: RUF012

    @post(
        "/",
        sync_to_thread=True,
        status_code=201,
        summary="Lock an evaluation request (the request document as JSON)",
        description="One lockfile per batch size; a list of batch sizes is a sweep. "
        "Needs the `run` scope; a chain stage's inline code (code the registry did not "
        "publish) also needs the `publish` scope in the namespace of the stage's model (403, "
        "nothing stored).",
    )
    def lock(self, hosted: Hosting, principal: Principal, data: dict[str, Any]) -> Locked:
        principal.require("run")
        check_request_code(principal, data)
        locked = hosted.lock_request(data)
        return Locked(
            artifacts=locked["artifacts"],
            points=[LockPoint(**p) for p in locked["points"]],
            sweep=locked["sweep"],
        )

    @put(
        "/{digest:str}",
        status_code=200,
        summary="Store a lockfile's canonical bytes under their sha256 (for runs)",
        description="Needs the `run` scope. Accepted only when this registry re-derives the "
        "lockfile byte for byte from the manifests it pins (every artifact published here, "
        "every field as its manifest says); otherwise 400 naming the differing fields. "
        "A chain stage's inline code (code the registry did not publish) also needs the "
        "`publish` scope in the namespace of the stage's model (403, nothing stored). "
        "Nothing is fetched.",
        request_max_body_size=LOCKFILE_MAX_BYTES,
    )
    async def upload(
        self, request: Request[Any, Any, Any], hosted: Hosting, principal: Principal, digest: str
    ) -> LockPoint:
        principal.require("run")
        body = await request.body()
        await anyio.to_thread.run_sync(lambda: check_lockfile_code(principal, body))
        lock, new = await anyio.to_thread.run_sync(lambda: hosted.store_lockfile(body, digest))
        return LockPoint(digest=lock.digest.hex, batch_size=lock.body.batch_size, new=new)

    @get(
        "/{digest:str}",
        sync_to_thread=True,
        summary="A lockfile's canonical bytes (ETag: its sha256)",
        media_type="application/json",
    )
    def download(
        self, hosted: Hosting, principal: Principal, digest: str, request: Request[Any, Any, Any]
    ) -> Response[bytes]:
        principal.require("read")
        d = Digest(digest)
        body = hosted.lockfile_bytes(d.hex)
        headers = headers_for(d)
        return not_modified(request, headers) or Response(
            body + b"\n", media_type="application/json", headers=headers
        )

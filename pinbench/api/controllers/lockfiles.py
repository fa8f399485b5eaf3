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
from pinbench.api.immutable import headers_for, not_modified
from pinbench.api.problems import ApiNotFound
from pinbench.api.schemas import Locked, LockPoint, ResolvedRef
from pinbench.artifacts.digest import Digest
from pinbench.db.models import Lockfile as LockfileRow
from pinbench.errors import UserError
from pinbench.registry import catalog, service
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.locking import store_lockfile
from pinbench.registry.names import Spec
from pinbench.registry.request import parse_request
from pinbench.registry.trust import rederive
from pinbench.workspace import Workspace

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
        ws: Workspace,
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
        parsed = [Spec.parse(s) for s in spec]
        platform = f"{arch}/{device}"

        def compute() -> bytes:
            resolution = catalog.resolve_specs(ws, parsed, platform=platform)
            refs = [
                ResolvedRef(kind=r.kind.value, name=r.name, version=str(r.version))
                for r in resolution.refs
            ]
            return msgspec.json.encode(refs)

        key = ("resolve", platform, *(str(s) for s in parsed))
        body = cache.hit(key)  # a cached answer is sent from the event loop
        if body is None:
            body = await anyio.to_thread.run_sync(lambda: cache.get(ws, key, compute))
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
        "Needs the `run` scope.",
    )
    def lock(self, ws: Workspace, principal: Principal, data: dict[str, Any]) -> Locked:
        principal.require("run")
        request = parse_request(data, source="(request body)")
        points = service.lock_points(ws, request)
        first = points[0][0]
        return Locked(
            artifacts=[a.ref for a in first.body.artifacts],
            points=[
                LockPoint(digest=lock.digest.hex, batch_size=lock.body.batch_size, new=new)
                for lock, new in points
            ],
            sweep=first.body.sweep if request.is_sweep else None,
        )

    @put(
        "/{digest:str}",
        status_code=200,
        summary="Store a lockfile's canonical bytes under their sha256 (for runs)",
        description="Needs the `run` scope. Accepted only when this registry re-derives the "
        "lockfile byte for byte from the manifests it pins (every artifact published here, "
        "every field as its manifest says); otherwise 400 naming the differing fields. "
        "Nothing is fetched.",
        request_max_body_size=LOCKFILE_MAX_BYTES,
    )
    async def upload(
        self, request: Request[Any, Any, Any], ws: Workspace, principal: Principal, digest: str
    ) -> LockPoint:
        principal.require("run")
        expected = Digest(digest)
        lock = Lockfile.from_bytes(await request.body(), source="(request body)")
        if lock.digest != expected:
            raise UserError(
                f"the body's sha256 is {lock.digest.hex}, not {expected.hex} as in the URL"
            )

        def store() -> bool:
            with ws.transaction() as session:
                rederive(session, lock)
                return store_lockfile(session, lock)

        new = await anyio.to_thread.run_sync(store)
        return LockPoint(digest=lock.digest.hex, batch_size=lock.body.batch_size, new=new)

    @get(
        "/{digest:str}",
        sync_to_thread=True,
        summary="A lockfile's canonical bytes (ETag: its sha256)",
        media_type="application/json",
    )
    def download(
        self, ws: Workspace, principal: Principal, digest: str, request: Request[Any, Any, Any]
    ) -> Response[bytes]:
        principal.require("read")
        d = Digest(digest)
        with ws.transaction() as session:
            row = session.get(LockfileRow, d.hex)
            if row is None:
                raise ApiNotFound(f"no lockfile {d.hex} is stored here")
            body = row.body.encode()
        headers = headers_for(d)
        return not_modified(request, headers) or Response(
            body + b"\n", media_type="application/json", headers=headers
        )

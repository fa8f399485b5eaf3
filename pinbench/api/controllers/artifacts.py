"""Artifacts: list and search, show a version or a name's versions, publish by upload, yank."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated, Any

import anyio.to_thread
import msgspec
from litestar import Controller, MediaType, Request, Response, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Parameter

from pinbench.accounts import Principal
from pinbench.api.cache import ReadCache
from pinbench.api.deps import ServerSettings
from pinbench.api.logs import event
from pinbench.api.paging import DEFAULT_LIMIT, MAX_AFTER, MAX_LIMIT, After, Limit, parsed
from pinbench.api.problems import ApiNotFound
from pinbench.api.schemas import ArtifactDetail, ArtifactSummary, Published, Yanked, YankRequest
from pinbench.api.upload import Received, receive_upload
from pinbench.sdk.hosting import Hosting
from pinbench.sdk.records import Published as PublishedRecord
from pinbench.sdk.registry import Registry
from pinbench.sdk.values import ArtifactRef

log = logging.getLogger("pinbench.api.publish")

if TYPE_CHECKING:
    from pinbench.registry.manifest import Manifest

UPLOAD_DOC = (
    "multipart/form-data: a part named `manifest` (the manifest's YAML or JSON) first, then "
    "one part named `file` per file, its filename the file's path in the manifest. Every file "
    "is sent and checked, even one the server already holds. Needs the `publish` scope and "
    "membership of the name's namespace."
)


def _summary(row: dict[str, Any]) -> ArtifactSummary:
    return ArtifactSummary(**row)


class ArtifactController(Controller):
    path = "/api/v1/artifacts"
    tags = ["artifacts"]  # noqa: RUF012

    @get(
        "/",
        sync_to_thread=True,
        summary="List and search artifact versions, a page at a time",
        description=f"A page of at most `limit` versions ({DEFAULT_LIMIT} unless given, "
        f"{MAX_LIMIT} at most) by kind, name, then version precedence. The next page: `after` "
        "= the last version's `KIND/NAME@VERSION` (keyset paging: a page costs the same however "
        "many versions there are); a page shorter than `limit` is the last. An `after` that is "
        "no such reference is refused with 400.",
    )
    def list_artifacts(
        self,
        hosted: Hosting,
        principal: Principal,
        kind: Annotated[str | None, Parameter(max_length=16)] = None,
        name: Annotated[str | None, Parameter(max_length=MAX_AFTER)] = None,
        q: Annotated[
            str | None, Parameter(description="Only names containing this text.", max_length=200)
        ] = None,
        limit: Limit = DEFAULT_LIMIT,
        after: After = None,
    ) -> list[ArtifactSummary]:
        principal.require("read")
        start = parsed(ArtifactRef.parse, after)
        return [_summary(r) for r in hosted.artifact_page(kind, name, q, start, limit)]

    @get(
        "/{ref:path}",
        summary="One version: KIND/NAME@VERSION",
        responses={
            200: ResponseSpec(ArtifactDetail, description="The version", generate_examples=False)
        },
    )
    async def show(
        self, registry: Registry, cache: ReadCache, principal: Principal, ref: str
    ) -> Response[bytes]:
        """A cached answer is sent from the event loop, keyed by the reference as written (only
        a reference that parsed and was found is ever kept); anything else is read in a
        thread."""
        principal.require("read")
        key = ("show", ref)
        body = cache.hit(key)
        if body is None:
            shown = str(ArtifactRef.parse(ref.lstrip("/")))
            body = await anyio.to_thread.run_sync(
                lambda: cache.answer(
                    key,
                    lambda: msgspec.json.encode(ArtifactDetail(**registry.show(shown))),
                )
            )
        return Response(body, media_type=MediaType.JSON)

    @get(
        "/signature/{ref:path}",
        sync_to_thread=True,
        operation_id="GetModelSignature",
        media_type="application/vnd.dev.sigstore.bundle.v0.3+json",
        summary="A model's signature, KIND/NAME@VERSION: OpenSSF model-signing (key-signed)",
        description="A Sigstore bundle (v0.3) whose DSSE envelope signs an in-toto statement "
        "listing every file of the model by its manifest path and sha256, signed with the "
        "registry's model-signing key (EC P-256; its PEM from GET /api/v1/keys). Check it with "
        "`model_signing verify key DIR --signature FILE --public_key KEY.pem` on the files laid "
        "out at their manifest paths. Models only (400 for other kinds).",
    )
    def signature(self, hosted: Hosting, principal: Principal, ref: str) -> Response[bytes]:
        principal.require("read")
        media, body = hosted.signature(ref.lstrip("/"))
        return Response(body, media_type=media)

    @get(
        "/versions/{kind:str}/{name:path}",
        sync_to_thread=True,
        summary="The published versions of KIND/NAME, lowest first, a page at a time",
        description=f"A page of at most `limit` versions ({DEFAULT_LIMIT} unless given, "
        f"{MAX_LIMIT} at most) by version precedence. The next page: `after` = the last "
        "version's `VERSION` (keyset paging); a page shorter than `limit` is the last. An "
        "`after` that is no version is refused with 400; a name without versions, 404.",
    )
    def versions(
        self,
        hosted: Hosting,
        principal: Principal,
        kind: str,
        name: str,
        limit: Limit = DEFAULT_LIMIT,
        after: After = None,
    ) -> list[ArtifactSummary]:
        principal.require("read")
        name = name.lstrip("/")
        start = parsed(lambda v: ArtifactRef.parse(f"{kind}/{name}@{v}"), after)
        rows = hosted.artifact_page(kind, name, None, start, limit)
        if not rows and (start is None or not hosted.artifact_page(kind, name, None, None, 1)):
            raise ApiNotFound(f"no version of {kind}/{name} is published")
        return [_summary(r) for r in rows]

    @post(
        "/",
        summary="Publish an artifact by upload",
        description=UPLOAD_DOC,
        request_max_body_size=None,
        status_code=201,
    )
    async def publish(
        self,
        request: Request[Any, Any, Any],
        hosted: Hosting,
        principal: Principal,
        settings: ServerSettings,
    ) -> Response[Published]:
        """201 with the new version; 200 when this exact manifest was already published."""
        principal.require("publish")
        existing: list[Published] = []

        def authorize(manifest: Manifest) -> None:
            principal.require_namespace(manifest.name, "publish")
            done = hosted.published(manifest)
            if done is not None:
                existing.append(_published(done))

        received: Received = await receive_upload(
            request.stream(),
            request.headers.get("content-type"),
            store=hosted.store,
            limit=settings.max_upload_bytes,
            authorize=authorize,
        )
        if existing:
            hosted.discard(received)
            same = existing[0]
            event(
                log,
                logging.INFO,
                f"{same.ref} already published",
                user=principal.user,
                token_id=principal.token_id,
                ref=same.ref,
                digest=same.manifest_digest,
                created=False,
            )
            return Response(same, status_code=200)

        def commit() -> Published:
            return _published(hosted.commit_upload(received, publisher=principal.user))

        result = await anyio.to_thread.run_sync(commit)
        event(
            log,
            logging.INFO,
            f"published {result.ref}" if result.created else f"{result.ref} already published",
            user=principal.user,
            token_id=principal.token_id,
            ref=result.ref,
            digest=result.manifest_digest,
            created=result.created,
            bytes=result.bytes,
        )
        return Response(result, status_code=201 if result.created else 200)


def _published(result: PublishedRecord) -> Published:
    return Published(**result.to_json())


class YankController(Controller):
    path = "/api/v1/yanks"
    tags = ["artifacts"]  # noqa: RUF012

    @post("/", sync_to_thread=True, summary="Yank a version (ranges skip it; pins still work)")
    def yank(self, registry: Registry, principal: Principal, data: YankRequest) -> Yanked:
        ref = ArtifactRef.parse(data.ref)
        principal.require_namespace(ref.name, "yank")
        registry.yank(str(ref), data.reason)
        event(log, logging.INFO, f"yanked {ref}", user=principal.user, ref=str(ref))
        return Yanked(ref=str(ref), reason=data.reason)

"""``Registry``: a pinbench registry, on this machine (a home folder) or behind a server (a URL),
with one set of methods for both. The CLI and the demo call these; nothing here prints.

Heavy parts (SQLAlchemy, the HTTP client, the evaluator) are imported by the method that needs
them, so that ``Registry.from_env().list()`` on a local home reads SQLite without loading the
evaluator.
"""

from __future__ import annotations

import builtins
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pinbench.errors import UserError
from pinbench.sdk.inquiries import Inquiries
from pinbench.sdk.records import LocalOnly, Published
from pinbench.sdk.run_records import RunRecords

if TYPE_CHECKING:
    from types import TracebackType

    from pinbench.artifacts.digest import Progress
    from pinbench.registry.lockfile import Lockfile as LockfileBody
    from pinbench.registry.stage_ahead import StagesAhead
    from pinbench.remote import Remote
    from pinbench.sdk.accounts import Accounts
    from pinbench.sdk.admin import Admin
    from pinbench.sdk.hosting import Hosting
    from pinbench.sdk.images import Images
    from pinbench.sdk.runs import Lockfile
    from pinbench.sdk.series import Series
    from pinbench.sdk.studies import Studies
    from pinbench.workspace import Workspace

T = TypeVar("T")
ProgressFactory = Callable[[str, int], "Progress"]
Say = Callable[[str], None]


class Registry(Inquiries, RunRecords):
    """A pinbench registry: ``Registry(home=PATH)`` (``~`` expanded; ``database_url`` defaults
    to SQLite in the home, PINBENCH_DATABASE_URL is not read), ``Registry(url=URL,
    token=TOKEN)`` for a ``pinbench serve``, or
    ``Registry.from_env()`` (PINBENCH_URL and PINBENCH_TOKEN when set, else PINBENCH_HOME and
    PINBENCH_DATABASE_URL). Use it as a context manager, or call ``close()``."""

    def __init__(
        self,
        home: Path | str | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        database_url: str | None = None,
    ) -> None:
        if url is not None and (home is not None or database_url is not None):
            raise UserError("a registry is either a home (and database) or a server URL")
        self.url = url.rstrip("/") if url else None
        self._token = token
        self._home = Path(home) if home is not None else None
        self._database_url = database_url
        self._ws: Workspace | None = None
        self._owns_ws = True
        self._remote: Remote | None = None
        self._opening = threading.Lock()
        """Held while the workspace or the HTTP client is made: threads making their first
        calls at once share one (decision 288)."""

    @classmethod
    def over(cls, ws: Workspace) -> Registry:
        """A registry on a workspace opened already (a server's); ``close`` leaves it open."""
        registry = cls()
        registry._ws = ws
        registry._owns_ws = False
        return registry

    @classmethod
    def from_env(cls) -> Registry:
        """The registry the environment names, as the CLI uses it."""
        url = os.environ.get("PINBENCH_URL")
        if url:
            return cls(url=url, token=os.environ.get("PINBENCH_TOKEN") or None)
        return cls()

    def __enter__(self) -> Registry:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection or the HTTP client (whichever was opened)."""
        if self._ws is not None:
            if self._owns_ws:
                self._ws.close()
            self._ws = None
        if self._remote is not None:
            self._remote.close()
            self._remote = None

    @property
    def home(self) -> Path | None:
        """A local registry's home folder (None behind a URL)."""
        return None if self.url is not None else self.workspace().settings.home

    @property
    def database_url(self) -> str | None:
        """A local registry's database URL (None behind a URL)."""
        return None if self.url is not None else self.workspace().settings.database_url

    @property
    def remote(self) -> bool:
        """True for a registry behind a server URL."""
        return self.url is not None

    def workspace(self) -> Workspace:
        """This machine's workspace (refused for a server URL): for what the API does not
        wrap, e.g. the evaluator's own functions."""
        if self.url is not None:
            raise LocalOnly(operation="a workspace", url=self.url)
        with self._opening:
            if self._ws is None:
                self._ws = self._open_workspace()
        return self._ws

    def _open_workspace(self) -> Workspace:
        """The workspace this registry names (made once, under ``_opening``)."""
        from dataclasses import replace

        from pinbench.config import Settings, check_home
        from pinbench.workspace import Workspace

        settings = Settings.from_env()
        if self._home is not None:  # PINBENCH_* are not read for a home given here
            home = self._home.expanduser().resolve()
            url = self._database_url or f"sqlite:///{home / 'pinbench.db'}"
            settings = Settings(home=home, database_url=url)
        elif self._database_url is not None:
            settings = replace(settings, database_url=self._database_url)
        check_home(settings.home)
        return Workspace(settings)

    def hosting(self) -> Hosting:
        """What a server does for its callers over this (local) registry."""
        from pinbench.sdk.hosting import Hosting

        return Hosting(self, self._local("hosting"))

    def accounts(self) -> Accounts:
        """Users, namespace members and API tokens."""
        from pinbench.sdk.accounts import Accounts

        return Accounts(self)

    def images(self) -> Images:
        """The framework images ``--runner docker`` runs in: build, push, pull."""
        from pinbench.sdk.images import Images

        return Images(self)

    def series(self) -> Series:
        """Series of runs, their thresholds, the gate and alerts (continuous benchmarking)."""
        from pinbench.sdk.series import Series

        return Series(self)

    def studies(self) -> Studies:
        """Studies: models x frameworks x scenarios x systems, run, shown, reported."""
        from pinbench.sdk.studies import Studies

        return Studies(self)

    def admin(self) -> Admin:
        """The operator's: create the home, migrate and check the database."""
        from pinbench.sdk.admin import Admin

        return Admin(self)

    def server(self) -> Remote:
        """The HTTP client of a registry behind a server URL."""
        assert self.url is not None
        with self._opening:
            if self._remote is None:
                from pinbench.remote import Remote

                self._remote = Remote(self.url, self._token)
        return self._remote

    def either(self, there: Callable[[Remote], T], here: Callable[[Workspace], T]) -> T:
        """``there(server)`` for a registry behind a URL, else ``here(workspace)``: the one
        place the local-or-remote choice is made (for what this API does not wrap yet)."""
        return there(self.server()) if self.url is not None else here(self.workspace())

    def _local(self, operation: str) -> Workspace:
        if self.url is not None:
            raise LocalOnly(operation=operation, url=self.url)
        return self.workspace()

    # -- the registry ---------------------------------------------------------------------

    def init(self) -> str:
        """Create the home: blob store, database at the current schema, signing keys; the
        schema revision."""
        return self._local("init").init()

    def publish(
        self,
        manifest: Path,
        *,
        files: Path | None = None,
        publisher: str | None = None,
        progress: ProgressFactory | None = None,
        say: Say | None = None,
        ahead: StagesAhead | None = None,
    ) -> Published:
        """Validate, hash and store a manifest's files and record the version (all or
        nothing). ``files``: where its files are, if not beside it. Large local files are
        staged in a child process while the registry loads and checks the manifest
        (``ahead``: staged already, by ``pinbench.registry.stage_ahead``)."""
        if self.url is not None:
            info = self.server().publish(manifest, files, say=say or (lambda _: None))
            return Published(
                ref=info["ref"],
                manifest_digest=info["manifest_digest"],
                created=info["created"],
                files=info["files"],
                bytes=info["bytes"],
                new_blobs=info.get("new_blobs"),
            )
        if ahead is None:  # stage large local files while the rest loads
            from pinbench.registry.stage_ahead import planned, stages_ahead

            local = planned(manifest) if files is None else []  # elsewhere: the command stages
            with stages_ahead(self.workspace().store, local) as started:
                return self.publish(
                    manifest,
                    files=files,
                    publisher=publisher,
                    progress=progress,
                    say=say,
                    ahead=started,
                )
        from pinbench.registry.manifest import load_manifest
        from pinbench.registry.publish import publish
        from pinbench.sdk.hosting import published_of

        result = publish(
            self.workspace(),
            load_manifest(manifest),
            manifest_dir=manifest.parent,
            files_dir=files,
            publisher=publisher,
            progress=progress,
            say=say,
            ahead=ahead,
        )
        return published_of(result)

    def yank(self, ref: str, reason: str) -> None:
        """Mark a version yanked: ranges skip it, exact pins still resolve it."""
        from pinbench.registry import catalog
        from pinbench.registry.names import ArtifactRef

        parsed = ArtifactRef.parse(ref)
        self.either(
            lambda remote: remote.yank(str(parsed), reason),
            lambda ws: catalog.yank(ws, parsed, reason),
        )

    def list(self, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        """Published versions (each as the REST API's JSON object), optionally of one kind
        and name."""
        from pinbench.registry import catalog
        from pinbench.registry.names import parse_kind

        parsed_kind = parse_kind(kind) if kind else None
        params = {k: v for k, v in (("kind", kind), ("name", name)) if v}
        rows: list[dict[str, Any]] = self.either(
            lambda remote: remote.pages("/api/v1/artifacts", params, _artifact_key),
            lambda ws: [r.to_json() for r in catalog.list_artifacts(ws, parsed_kind, name)],
        )
        return rows

    def show(self, ref: str) -> dict[str, Any]:
        """One version: its manifest, files and record (the REST API's JSON object)."""
        from pinbench.registry import catalog
        from pinbench.registry.names import ArtifactRef

        parsed = ArtifactRef.parse(ref)
        info: dict[str, Any] = self.either(
            lambda remote: remote.json("GET", f"/api/v1/artifacts/{parsed}"),
            lambda ws: catalog.show(ws, parsed),
        )
        return info

    def signature(self, ref: str) -> bytes:
        """A model version's OpenSSF model-signing bundle, signed with the registry's
        model-signing key (for ``model_signing verify key``)."""
        from pinbench.provenance.modelsig import signature_of
        from pinbench.registry.names import ArtifactRef

        parsed = ArtifactRef.parse(ref)
        body: bytes = self.either(
            lambda remote: remote.call("GET", f"/api/v1/artifacts/signature/{parsed}").content,
            lambda ws: signature_of(ws, parsed),
        )
        return body

    def resolve(
        self, specs: Sequence[str], *, arch: str = "amd64", device: str = "cpu"
    ) -> builtins.list[dict[str, str]]:
        """The highest version of each artifact such that every constraint holds (``specs``:
        ``KIND/NAME@RANGE``), for a system of ``arch`` and ``device``: ``kind``, ``name`` and
        ``version`` of each."""
        from pinbench.registry import catalog
        from pinbench.registry.names import Spec

        given = list(specs)
        parsed = [Spec.parse(s) for s in given]

        def here(ws: Workspace) -> builtins.list[dict[str, str]]:
            resolution = catalog.resolve_specs(ws, parsed, platform=f"{arch}/{device}")
            return [
                {"kind": r.kind.value, "name": r.name, "version": str(r.version)}
                for r in resolution.refs
            ]

        return self.either(lambda remote: remote.resolve(given, arch=arch, device=device), here)

    def lock(
        self, request: Path | Mapping[str, Any], *, source: str = "<request>"
    ) -> builtins.list[Lockfile]:
        """Resolve an evaluation request (a file, or the document as a dict: ``source`` names it
        in errors) and pin its
        lockfile: one, or one per batch size of a sweep. Each is recorded in the registry;
        write it with ``Lockfile.write``."""
        from pinbench.registry import service
        from pinbench.registry.request import parse_request
        from pinbench.registry.request_file import load_request, read_request_data
        from pinbench.sdk.runs import Lockfile

        path = request if isinstance(request, Path) else None
        given = None if isinstance(request, Path) else dict(request)
        parsed = load_request(path) if path is not None else parse_request(given, source=source)

        def there(remote: Remote) -> builtins.list[tuple[LockfileBody, bool]]:
            data = read_request_data(path) if path is not None else given
            assert data is not None
            locked = remote.lock(data)
            return [(remote.lockfile(p["digest"]), p["new"]) for p in locked["points"]]

        points = self.either(there, lambda ws: service.lock_points(ws, parsed))
        return [Lockfile(body, self, new=created) for body, created in points]

    def lockfile(self, source: Path | Mapping[str, Any]) -> Lockfile:
        """A lockfile file, read and checked for canonical form, or a lockfile document (a
        dict, e.g. an edited ``Lockfile.to_json()``) put in canonical form; not yet checked
        against this registry: ``verify`` and ``run`` do that."""
        from pinbench.registry.lockfile import Lockfile as LockfileBody
        from pinbench.sdk.runs import Lockfile

        if isinstance(source, Path):
            return Lockfile(LockfileBody.read(source), self)
        from pinbench.artifacts.canonical import canonical_json

        return Lockfile(LockfileBody.from_bytes(canonical_json(dict(source))), self)


def _artifact_key(row: dict[str, Any]) -> str:
    """A listed version's key in the REST API's paged listing: ``KIND/NAME@VERSION``."""
    return f"{row['kind']}/{row['name']}@{row['version']}"

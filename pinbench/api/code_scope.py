"""A server runs only published code (issue 63 item 4): what a token's scopes let its holder
run through a request or a lockfile (invariant 9).

Code is *published* when it is bytes of a published artifact, pinned by its manifest: a
model's ``preprocess``/``postprocess`` (a file of the model, or inline in its manifest: a
lockfile is stored or run only as the registry re-derives it from that manifest), and a chain
stage's ``code``/``join`` naming a ``file`` of the stage's own published model. A chain
stage's inline ``code`` text (``code:`` or ``join:`` with ``code``) is carried by the request
and its lockfile and published by nobody: it is the caller's own Python.

The rule: inline code in a chain stage runs only for a caller who may publish in the namespace
of *that stage's model* (``Principal.require_namespace``: the ``publish`` scope and membership,
or an ``admin`` token; a model without a namespace: an admin token only). That caller could
publish the same text as a file of a new version of the stage's model and run it as published
code, so accepting it inline grants nothing their scopes did not; anyone else (a ``run`` token,
a publisher in another namespace, a member whose token lacks ``publish``) is refused. The
stage's model is the owner because the code runs beside it, as its input (and, with a
``join``, its output): no chain has a name of its own, and the request's (last) model says
nothing about a stage before it. Every stage with inline code is judged, each by its own
model's namespace. ``serve --allow-code`` is the operator's consent to run code at all (in
docker); it never makes unpublished code published.

``check_chain_code`` is the one check, asked at every entry point that takes such a request or
lockfile, before anything is stored or queued: ``POST /api/v1/lockfiles`` (the request),
``PUT /api/v1/lockfiles/{digest}`` (the lockfile's bytes), ``POST /api/v1/runs`` and
``/runs/on`` (a stored lockfile, whoever stored it: a rerun on a server is such a run). The
UI's evaluate form queues only requests it builds itself, which never have a chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pinbench.accounts import AuthError, Forbidden, Principal
from pinbench.registry.chain_spec import ChainStage
from pinbench.registry.lockfile import Lockfile
from pinbench.registry.names import namespace_of
from pinbench.registry.request import parse_request

if TYPE_CHECKING:
    from pinbench.registry.chain_spec import ChainSpec, LockedChain, LockedStage


class UnpublishedCode(Forbidden):
    """Inline code in a chain stage whose caller may not publish in its model's namespace."""

    def __init__(self, *, stage: str, model: str, namespace: str | None, reason: str) -> None:
        where = (
            f"in namespace {namespace!r}"
            if namespace is not None
            else f"names without a namespace, as {model!r} (an admin token)"
        )
        super().__init__(
            f"inline code in chain stage {stage!r} was not published: only a caller who may "
            f"publish {where} may run it ({reason}); publish it as a file of the stage's "
            f"model {model} and name that `file` in the stage's `code`"
        )
        self.stage = stage
        self.model = model
        self.namespace = namespace
        self.reason = reason


def inline_code(stage: ChainStage | LockedStage) -> list[str]:
    """``code`` and/or ``join``: the stage's code given as text, not as a file of its model."""
    return [
        role
        for role, code in (("code", stage.code), ("join", stage.join))
        if code is not None and code.code is not None
    ]


def _model_name(stage: ChainStage | LockedStage) -> str:
    """The stage's model's name: a request's ``NAME@RANGE`` parsed, a lockfile's as pinned."""
    return stage.model_spec.name if isinstance(stage, ChainStage) else stage.model


def check_chain_code(principal: Principal, chain: ChainSpec | LockedChain | None) -> None:
    """Refuse (``UnpublishedCode``, 403) the first stage of ``chain`` with inline code that
    ``principal`` may not publish in its model's namespace."""
    if chain is None:
        return
    stages: Sequence[ChainStage | LockedStage] = chain.stages
    for stage in stages:
        if not inline_code(stage):
            continue
        model = _model_name(stage)
        try:
            principal.require_namespace(model, "run inline chain code beside")
        except (Forbidden, AuthError) as exc:
            raise UnpublishedCode(
                stage=stage.name, model=model, namespace=namespace_of(model), reason=str(exc)
            ) from None


def check_request_code(principal: Principal, data: object) -> None:
    """A request document sent to be locked (``POST /api/v1/lockfiles``), before it is: its
    chain's inline code (``RequestError`` first where the document is not a request)."""
    check_chain_code(principal, parse_request(data, source="(request body)").chain)


def check_lockfile_code(principal: Principal, body: bytes) -> None:
    """A lockfile's bytes sent to be stored (``PUT /api/v1/lockfiles/{digest}``), before they
    are: its chain's inline code (``LockfileError`` first where they are not a lockfile)."""
    check_stored_code(principal, Lockfile.from_bytes(body, source="(request body)"))


def check_stored_code(principal: Principal, lock: Lockfile) -> None:
    """A lockfile to store, or a stored one to queue a run of (``POST /api/v1/runs``,
    ``/runs/on``), before the run is queued: its chain's inline code."""
    check_chain_code(principal, lock.body.chain)

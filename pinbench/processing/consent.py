"""Whether a run may execute a model's processing code: the decision of whoever runs it.

The code is the publisher's: running it is running their program. A run of a model that
carries ``preprocess`` or ``postprocess`` is refused before anything executes unless its caller
allowed it: on the CLI with ``pinbench run --allow-code`` for that run; on a server (and its
cluster agents) only when its operator started it with ``pinbench serve --allow-code``, as a
pickle (``check_server_pickle``), in the sandbox of whichever runner the run uses: a container,
or the local and venv runners' bubblewrap (no network, nothing of the host's writable, the
home and keys out of sight), which a server and an agent never run without (decision 313). A
lockfile never decides this.
"""

from __future__ import annotations

from pinbench.errors import UserError
from pinbench.registry.lockfile import CODE_ROLES, LockedModel, Lockfile


class CodeRefused(UserError):
    """A run would execute a model's processing code and was not allowed to."""

    def __init__(self, *, model: str, roles: list[str], reason: str) -> None:
        super().__init__(
            f"model {model} carries {' and '.join(roles)} code: running it runs the "
            f"publisher's Python. {reason}"
        )
        self.model = model
        self.roles = roles
        self.reason = reason


def code_roles(model: LockedModel | None) -> list[str]:
    """``preprocess``, ``postprocess`` and/or ``builder`` (a ``torch-state-dict`` model's):
    the code a model carries (none for no model). Each runs only with the run's consent."""
    if model is None:
        return []
    return [r for r in CODE_ROLES if getattr(model, r) is not None]


def needs_code(lock: Lockfile) -> bool:
    """The model carries code, or the chain it ends has code between stages."""
    chain = lock.body.chain
    return bool(code_roles(lock.body.model)) or (chain is not None and chain.has_code)


def _refuse(lock: Lockfile, reason: str) -> CodeRefused:
    model = lock.body.model
    assert model is not None
    roles = code_roles(model)
    name = f"{model.name}@{model.version}" + ("" if roles else "'s chain")
    return CodeRefused(model=name, roles=roles or ["between-stage"], reason=reason)


def check_code(lock: Lockfile, *, allow: bool) -> None:
    """Every run: a model's code runs only when its caller allowed it (on the CLI, the run's
    own ``--allow-code``; a server allows it only after ``check_server_code``)."""
    if needs_code(lock) and not allow:
        whose = "its publisher" if code_roles(lock.body.model) else "its chain's authors"
        raise _refuse(
            lock,
            f"Run it only if you trust {whose}, with: pinbench run LOCKFILE --allow-code "
            "(with --runner docker where you do not: no network, read-only files)",
        )


def check_server_code(lock: Lockfile, *, server_allows: bool) -> None:
    """On a server (and its agents): a model's code runs only if the operator allowed it
    (``serve --allow-code``), then in the sandbox of the run's runner (decision 313)."""
    if needs_code(lock) and not server_allows:
        raise _refuse(
            lock,
            "This server never executes processing code (its operator can allow it, in the "
            "sandbox of every runner, with `pinbench serve --allow-code`)",
        )

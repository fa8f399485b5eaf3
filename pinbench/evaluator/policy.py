"""What a run may execute: pickled models are code, so loading one is the caller's decision.

A ``torch-pickle`` model runs arbitrary code when it is loaded. pinbench unpickles one only when
its manifest says ``trusted: true`` (the publisher's claim, checked against the registry) *and*
whoever starts the run allows it: on the CLI with ``pinbench run --allow-pickle`` for that run;
on a server (and its cluster agents) only when the operator started it with ``pinbench serve
--allow-pickle``, in whichever runner the run uses: every runner opens a model in a sandbox (a
container; the local and venv runners' bubblewrap, which a server and an agent never run
without: decisions 310, 313). A lockfile never decides this.
"""

from __future__ import annotations

from pinbench.artifacts.model_formats import pickle_routes
from pinbench.errors import UserError
from pinbench.registry.lockfile import Lockfile

PICKLE_FORMATS = frozenset({"torch-pickle"})


class PickleRefused(UserError):
    """A run would unpickle a model and was not allowed to: why (``reason``), then the routes
    every refusal of a pickle names (``model_formats.pickle_routes``)."""

    def __init__(self, *, model: str, reason: str) -> None:
        super().__init__(
            f"model {model} is a pickle (format torch-pickle): loading it runs arbitrary code. "
            f"{reason}. {pickle_routes()}"
        )
        self.model = model
        self.reason = reason


def _pickled(fmt: str, trusted: bool) -> bool:
    """A pickle format, or a Hugging Face folder whose weights are pickles (publish lets such
    a folder in only with ``trusted: true``, and refuses ``trusted`` on one without)."""
    return trusted if fmt == "hf-folder" else fmt in PICKLE_FORMATS


def _pickles(lock: Lockfile) -> list[str]:
    """``NAME@VERSION`` of each model the run loads that is a pickle: the model, and every
    stage of its chain."""
    models = []
    model = lock.body.model
    if model is not None:
        models.append((f"{model.name}@{model.version}", model.format, model.trusted))
    chain = lock.body.chain
    for stage in chain.stages if chain is not None else []:
        models.append((f"{stage.model}@{stage.version}", stage.format, stage.trusted))
    return list(dict.fromkeys(name for name, fmt, trusted in models if _pickled(fmt, trusted)))


def needs_pickle(lock: Lockfile) -> bool:
    """The run would load a pickle: its model or any stage of its chain."""
    return bool(_pickles(lock))


def _model(lock: Lockfile) -> str:
    pickles = _pickles(lock)
    return ", ".join(pickles) if pickles else "(none)"


def check_pickle(lock: Lockfile, *, allow: bool) -> None:
    """Every run: a pickled model runs only when its caller allowed it (on the CLI, the run's
    own ``--allow-pickle``; a server allows it only after ``check_server_pickle``)."""
    if needs_pickle(lock) and not allow:
        raise PickleRefused(
            model=_model(lock),
            reason="Run it only if you trust its publisher, with: pinbench run LOCKFILE "
            "--allow-pickle",
        )


def check_server_policy(lock: Lockfile, allow_pickle: bool, allow_code: bool) -> None:
    """What the server's operator allows, asked before a run is queued: pickles
    (``check_server_pickle``) and a model's processing code (``check_server_code``). Either runs,
    once allowed, in the sandbox of the runner the run uses (on the server's machine or a
    cluster's agent): never in a server's or an agent's own process (decision 313)."""
    from pinbench.processing.consent import check_server_code

    check_server_pickle(lock, server_allows=allow_pickle)
    check_server_code(lock, server_allows=allow_code)


def check_server_pickle(lock: Lockfile, *, server_allows: bool) -> None:
    """On a server: a pickled model runs only if the operator allowed it."""
    if needs_pickle(lock) and not server_allows:
        raise PickleRefused(
            model=_model(lock),
            reason="This server never executes pickles (its operator can allow them, in the "
            "sandbox of every runner, with `pinbench serve --allow-pickle`)",
        )

"""Which runner a server (or its agent) runs a lockfile in: the ones its operator allows, and
``auto``'s choice among them."""

from __future__ import annotations

from pinbench.errors import UserError
from pinbench.registry.lockfile import Lockfile


class RunnerRefused(UserError):
    """A server's operator did not allow this runner."""

    def __init__(self, *, runner: str, allowed: tuple[str, ...]) -> None:
        super().__init__(
            f"this server does not run evaluations in the {runner!r} runner; its operator "
            f"allows: {', '.join(allowed)} (`pinbench serve --runners`)"
        )
        self.runner = runner
        self.allowed = allowed


def check_server_runner(runner: str, allowed: tuple[str, ...]) -> None:
    """Model code (TorchScript ops, SavedModel graphs, a framework's own loaders) runs in the
    runner: an operator who does not trust every publisher allows only ``docker``."""
    if runner not in allowed:
        raise RunnerRefused(runner=runner, allowed=allowed)


AUTO_ORDER = ("docker", "venv", "local")
"""``auto``'s preference on a server or agent: the most confined runner it may use."""


def choose_server_runner(runner: str, lock: Lockfile, allowed: tuple[str, ...]) -> str:
    """The runner a server (or its agent) runs ``lock`` in: a named one if the operator allows
    it; ``auto`` the first of ``AUTO_ORDER`` among ``allowed`` that can run here (docker only
    when the lockfile pins an image and a Docker Engine answers), else the first allowed one,
    whose own error then says what it lacks."""
    if runner != "auto" or not allowed:
        check_server_runner(runner, allowed)
        return runner
    # deferred: the runners (and the Docker probe) only when ``auto`` is asked for
    from pinbench.evaluator.runners import choose_runner

    usable = [r for r in AUTO_ORDER if r in allowed]
    if "docker" in usable and choose_runner("auto", lock) != "docker":
        usable.remove("docker")
    return usable[0] if usable else allowed[0]

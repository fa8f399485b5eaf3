"""What a run through a server may not ask for: the decisions that are the local user's."""

from __future__ import annotations

from pinbench.errors import UserError


def check_local_decisions(
    allow_pickle: bool, allow_code: bool, sandbox: str, audit: bool = False
) -> None:
    """A run queued on a server follows its operator's ``serve --allow-pickle`` and
    ``--allow-code``, and is sandboxed; ``audit`` is the local host's clock: asking otherwise
    is refused, naming the flag."""
    if allow_pickle:
        raise UserError(
            "allow_pickle (--allow-pickle) is a local decision: a server runs pickles only "
            "when its operator started it with `pinbench serve --allow-pickle`"
        )
    if allow_code:
        raise UserError(
            "allow_code (--allow-code) is a local decision: a server runs a model's "
            "processing code only when its operator started it with `pinbench serve "
            "--allow-code`"
        )
    if audit:
        raise UserError(
            "audit (--audit) is a local decision: the host that keeps the clock is the one "
            "that runs it (any runner on this machine)"
        )
    if sandbox != "bwrap":
        raise UserError(f"sandbox={sandbox!r} is a local decision: a server's runs are sandboxed")

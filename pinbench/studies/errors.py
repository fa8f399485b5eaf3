"""What a study refuses, each naming what is wrong."""

from __future__ import annotations

from pinbench.errors import InvalidDocument, UserError


class StudyError(InvalidDocument):
    what = "study"


class StudyNotFound(UserError):
    def __init__(self, *, name: str) -> None:
        super().__init__(
            f"no study {name!r}: run one first (pinbench study run FILE), or name a built-in "
            "study (seed, seed-quick, engines)"
        )
        self.name = name


class StudyChanged(UserError):
    """A study of this name was run from another definition: its cells would mean two things."""

    def __init__(self, *, name: str, recorded: str, given: str) -> None:
        super().__init__(
            f"study {name!r} was run from another definition (sha256 {recorded[:12]}, this "
            f"file's is {given[:12]}): give this one another name, or `pinbench study forget "
            f"{name}` first (its runs are kept)"
        )
        self.name = name
        self.recorded = recorded
        self.given = given


class StudyRemote(UserError):
    def __init__(self) -> None:
        super().__init__(
            "a study runs on a local registry (PINBENCH_HOME); through a server it is not "
            "built yet: unset PINBENCH_URL"
        )

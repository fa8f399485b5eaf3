"""System names: what an agent may be called and a request may place a run on."""

from __future__ import annotations

import re

from pinbench.errors import UserError

NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\Z")
"""A system's name: lowercase letters, digits and inner hyphens, at most 63 characters (a DNS
label, so it can name a Ray resource, a Kubernetes node label and a URL path segment)."""


class BadSystemName(UserError):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"system name {name!r}: use lowercase letters, digits and inner hyphens, "
            "at most 63 characters (e.g. lab-a)"
        )


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise BadSystemName(name)
    return name

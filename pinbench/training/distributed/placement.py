"""Where one system's ranks of a training run spread over several systems stand (decision
317): rank 0's rendezvous address and port, the first rank this system starts and how many,
and every system of the run (rank 0's first).

The server asks the first system's agent for a free port on its address
(``cluster.ranks``), then sends each system its ``RankPlacement`` with the lockfile; the
agent hands it to its runner (``placed``: the one evaluation running in that thread), which
writes it into the worker's job and gives that sandbox the machine's network: gloo's ranks
connect to each other's addresses (``launch``); every file a rank reads is the agent's
verified copy of what the lockfile pins, and what rank 0 takes from other ranks is checked
(``figures``).

Plain data, bounded where it is parsed: a placement names one machine's IPv4 address (never
a host name to resolve; the server takes it from rank 0's agent and compares it with that
agent's Ray node), a port, systems by their names, and ranks inside the lockfile's
``workers``. Gloo's store and ranks do not authenticate their peers: whoever reaches rank
0's port during the rendezvous could join, as whoever reaches Ray's ports can run code on
every node; the cluster's network is private (docs/cluster.md, "Ports and network").
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated

import msgspec

from pinbench.errors import UserError
from pinbench.specs.distributed import DistributedSpec
from pinbench.specs.system_names import NAME as SYSTEM_NAME

NAME = msgspec.Meta(min_length=1, max_length=128)
"""A system's name as a placement carries it (its characters: ``system_names.NAME``)."""
_PLACED: ContextVar[RankPlacement | None] = ContextVar("pinbench_rank_placement", default=None)


class RankPlacement(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """One system's share of a run's ranks: ranks ``first`` .. ``first + count - 1``, meeting
    at rank 0's ``address``:``port``; ``systems``: every system of the run, in rank order."""

    address: str
    port: Annotated[int, msgspec.Meta(ge=1024, le=65535)]
    first: Annotated[int, msgspec.Meta(ge=0, le=63)]
    count: Annotated[int, msgspec.Meta(ge=1, le=64)]
    systems: Annotated[list[Annotated[str, NAME]], msgspec.Meta(min_length=2, max_length=64)]

    def __post_init__(self) -> None:
        try:
            address = ipaddress.IPv4Address(self.address)
        except ValueError:
            raise ValueError(f"address must be an IPv4 address, got {self.address!r}") from None
        if address.is_unspecified or address.is_multicast or address.is_reserved:
            raise ValueError(f"address must be one machine's, got {self.address!r}")
        for name in self.systems:
            if not SYSTEM_NAME.fullmatch(name):
                raise ValueError(f"systems: {name!r} is not a system's name")
        if len(set(self.systems)) != len(self.systems):
            raise ValueError("systems: a system named twice")

    @property
    def leads(self) -> bool:
        """Whether this system starts rank 0 (evaluates, reports, returns the weights)."""
        return self.first == 0

    def check(self, spec: DistributedSpec) -> None:
        """Refuse a placement that does not cut ``spec``'s ranks as it says."""
        if (
            spec.spread != len(self.systems)
            or self.count != spec.per_system
            or self.first % self.count
            or self.first + self.count > spec.workers
        ):
            raise BadPlacement(
                reason=f"ranks {self.first}..{self.first + self.count - 1} on "
                f"{len(self.systems)} systems, for workers = {spec.workers} over "
                f"systems = {spec.spread}"
            )


class BadPlacement(UserError):
    def __init__(self, *, reason: str) -> None:
        super().__init__(f"a training run's rank placement does not fit its lockfile: {reason}")
        self.reason = reason


def current() -> RankPlacement | None:
    """The placement of the evaluation this thread runs (None: every rank here)."""
    return _PLACED.get()


@contextmanager
def placed(placement: RankPlacement | None) -> Iterator[None]:
    """Run this thread's evaluation with ``placement``."""
    token = _PLACED.set(placement)
    try:
        yield
    finally:
        _PLACED.reset(token)


def parse(data: object) -> RankPlacement:
    """A placement from plain data (a server's message, a job file); ``BadPlacement``."""
    try:
        return msgspec.convert(data, RankPlacement)
    except msgspec.ValidationError as exc:
        raise BadPlacement(reason=str(exc)) from None


def free_port(address: str) -> int:
    """A port free on ``address`` now (rank 0's store binds it when its training starts)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


def interface_toward(address: str) -> str:
    """The name of this machine's network interface that holds the address its packets to
    ``address`` leave from (gloo's ``GLOO_SOCKET_IFNAME``: each rank listens there for its
    peers); ``BadPlacement`` when none does (IPv4 only)."""
    import fcntl
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((address, 9))  # a route lookup: nothing is sent
        except OSError as exc:
            raise BadPlacement(reason=f"no route to rank 0 at {address}: {exc}") from None
        source = str(probe.getsockname()[0])
        for _, name in socket.if_nameindex():
            try:  # SIOCGIFADDR: the interface's IPv4 address
                packed = fcntl.ioctl(
                    probe.fileno(), 0x8915, struct.pack("256s", name[:15].encode())
                )
            except OSError:
                continue  # no IPv4 address
            if socket.inet_ntoa(packed[20:24]) == source:
                return name
    raise BadPlacement(reason=f"no interface here holds {source}, the way to {address}")

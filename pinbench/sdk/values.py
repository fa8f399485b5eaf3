"""The value types the API's methods take and give as text, for code that wants them parsed:
``ArtifactRef`` (``KIND/NAME@VERSION``), ``Spec`` (``KIND/NAME@RANGE``), ``Kind`` and
``parse_kind``, ``Digest`` (a sha256: 64 lower-case hex digits), ``trace_parts`` (what a trace
level records; an unknown level refused). Parsing one reads nothing and runs nothing."""

from pinbench.artifacts.digest import Digest
from pinbench.registry.names import ArtifactRef, Kind, Spec, parse_kind
from pinbench.trace.levels import parts as trace_parts

__all__ = ["ArtifactRef", "Digest", "Kind", "Spec", "parse_kind", "trace_parts"]

"""The value types the API's methods take and give as text, for code that wants them parsed:
``ArtifactRef`` (``KIND/NAME@VERSION``), ``Spec`` (``KIND/NAME@RANGE``), ``Kind`` and
``parse_kind``, ``Digest`` (a sha256: 64 lower-case hex digits), ``trace_parts`` (what a trace
level records; an unknown level refused); versions and npm-style ranges (``parse_version``,
``Range``, ``satisfying``); ``json_schemas`` (each manifest kind's JSON Schema) and
``bundle_keyid`` (the key a model-signing bundle names); ``load_yaml``, ``read_yaml_file`` and
``YamlRefused`` (YAML read with pinbench's bounds: no aliases bombs, no tags, size-capped);
``SeriesKey`` and ``parse_series_name`` (a series' name, whole or its leading fields).
Each needs no registry and runs nothing; each is imported when first named. And ``Stop`` with
``stop_on_signals``: what a run's ``stop`` argument takes, so that Ctrl-C or SIGTERM stops it
safely (recorded interrupted)."""

from typing import TYPE_CHECKING

from pinbench.sdk.lazy import lazy_names

__all__ = [
    "ArtifactRef",
    "Digest",
    "Kind",
    "Range",
    "SeriesKey",
    "Spec",
    "Stop",
    "YamlRefused",
    "bundle_keyid",
    "json_schemas",
    "load_yaml",
    "parse_kind",
    "parse_series_name",
    "parse_version",
    "read_yaml_file",
    "satisfying",
    "stop_on_signals",
    "trace_parts",
]

if TYPE_CHECKING:
    from pinbench.artifacts.digest import Digest
    from pinbench.provenance.modelsig import bundle_keyid
    from pinbench.registry.manifest import json_schemas
    from pinbench.registry.names import ArtifactRef, Kind, Spec, parse_kind
    from pinbench.registry.ranges import Range, satisfying
    from pinbench.registry.versions import parse_version
    from pinbench.registry.yamlsafe import YamlRefused, load_yaml, read_yaml_file
    from pinbench.series.names import SeriesKey
    from pinbench.series.names import parse_fields as parse_series_name
    from pinbench.trace.levels import parts as trace_parts
    from pinbench.worker.stop import Stop, stop_on_signals

_HOME = {
    "ArtifactRef": ("pinbench.registry.names", "ArtifactRef"),
    "Digest": ("pinbench.artifacts.digest", "Digest"),
    "Kind": ("pinbench.registry.names", "Kind"),
    "Range": ("pinbench.registry.ranges", "Range"),
    "Spec": ("pinbench.registry.names", "Spec"),
    "bundle_keyid": ("pinbench.provenance.modelsig", "bundle_keyid"),
    "json_schemas": ("pinbench.registry.manifest", "json_schemas"),
    "parse_kind": ("pinbench.registry.names", "parse_kind"),
    "parse_version": ("pinbench.registry.versions", "parse_version"),
    "satisfying": ("pinbench.registry.ranges", "satisfying"),
    "trace_parts": ("pinbench.trace.levels", "parts"),
    "SeriesKey": ("pinbench.series.names", "SeriesKey"),
    "parse_series_name": ("pinbench.series.names", "parse_fields"),
    "Stop": ("pinbench.worker.stop", "Stop"),
    "stop_on_signals": ("pinbench.worker.stop", "stop_on_signals"),
    "YamlRefused": ("pinbench.registry.yamlsafe", "YamlRefused"),
    "load_yaml": ("pinbench.registry.yamlsafe", "load_yaml"),
    "read_yaml_file": ("pinbench.registry.yamlsafe", "read_yaml_file"),
}

__getattr__ = lazy_names(__name__, _HOME)

"""A request file read from disk: its YAML within ``yamlsafe``'s limits, then validated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinbench.registry.request import Request, RequestError, parse_request
from pinbench.registry.yamlsafe import YamlRefused, load_yaml, read_yaml_file


def read_request_data(path: Path) -> dict[str, Any]:
    """A request file's YAML as data (within ``yamlsafe``'s limits), not yet validated."""
    try:
        data = load_yaml(read_yaml_file(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise RequestError(source=str(path), reason=f"cannot read: {exc}") from None
    except YamlRefused as exc:
        raise RequestError(source=str(path), reason=exc.reason) from None
    if not isinstance(data, dict):
        raise RequestError(source=str(path), reason="expected a mapping at the top level")
    return data


def load_request(path: Path) -> Request:
    return parse_request(read_request_data(path), source=str(path))

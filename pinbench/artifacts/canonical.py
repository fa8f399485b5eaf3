"""Canonical JSON: sorted keys, UTF-8, no insignificant whitespace. Digests are taken of it."""

from __future__ import annotations

import json
from typing import Any


def canonical_json(data: Any) -> bytes:
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")

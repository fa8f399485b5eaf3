"""Schemathesis hooks for tests/test_api_fuzz.py (loaded through ``SCHEMATHESIS_HOOKS``).

The upload route reads its multipart body as a stream, so the server's OpenAPI document
declares no body for it and schemathesis would send none. Here the schema it loads gains that
body (a ``manifest`` field and ``file`` parts) with the hostile YAML manifests of
tests/hostile_yaml.py as explicit examples: each is sent, and none may get a 5xx.
"""

from __future__ import annotations

from typing import Any

import schemathesis

from tests.hostile_yaml import HOSTILE, MODEL_BYTES

UPLOAD_PATH = "/api/v1/artifacts"


def upload_body() -> dict[str, Any]:
    """The upload's multipart body, with one explicit example per hostile manifest."""
    examples = {
        h.name.replace(" ", "-"): {
            "summary": h.why,
            "value": {"manifest": h.text, "file": MODEL_BYTES.decode()},
        }
        for h in HOSTILE
    }
    return {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["manifest"],
                    "properties": {
                        "manifest": {"type": "string"},
                        "file": {"type": "string", "format": "binary"},
                    },
                },
                "examples": examples,
            }
        },
    }


@schemathesis.hook
def before_load_schema(context: Any, raw_schema: dict[str, Any]) -> None:
    raw_schema["paths"][UPLOAD_PATH]["post"]["requestBody"] = upload_body()

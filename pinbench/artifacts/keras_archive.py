"""Keras ``.keras`` archives made byte-reproducible: Keras stamps the save time into the
archive and writes Python ``id()``s into its config, so equal weights saved twice differ.
``normalise_keras`` rewrites the archive so they do not (the built-in catalog's exports and
a training run's final weights both go through it)."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path


def normalise_keras(src: Path, dst: Path) -> None:
    """Keras stamps the save time into the archive; drop it so equal weights give equal bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in sorted(zin.infolist(), key=lambda i: i.filename):
            data = zin.read(info.filename)
            if info.filename == "metadata.json":
                meta = json.loads(data)
                meta.pop("date_saved", None)
                data = json.dumps(meta, sort_keys=True).encode()
            elif info.filename == "config.json":
                data = _renumber_shared_ids(data.decode()).encode()
            zout.writestr(zipfile.ZipInfo(info.filename, (1980, 1, 1, 0, 0, 0)), data)
    dst.write_bytes(out.getvalue())


def _renumber_shared_ids(text: str) -> str:
    """Keras writes Python ``id()``s as ``shared_object_id``; number them in order instead."""
    ids: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return f'"shared_object_id": {ids.setdefault(match.group(1), str(len(ids) + 1))}'

    return re.sub(r'"shared_object_id": (\d+)', number, text)

"""``torch.export`` archives for the tests: a tiny model, its archive, and the archive whose
symbolic size runs code when ``torch.export.load`` evaluates it (``sympy.sympify``, that is
``eval``). Apart from tests/helpers.py, which every test imports, since this imports PyTorch."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch


class Tiny(torch.nn.Module):
    """``x (N, 1, 8, 8) -> (N, 10)``: one linear layer."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1))  # type: ignore[no-any-return]


def export_to(module: torch.nn.Module, path: Path) -> Path:
    """``module`` exported for an ``x`` of ``(N, 1, 8, 8)``, any batch ``N``, saved at ``path``."""
    batch = torch.export.Dim("batch", min=1)
    shapes = {"x": {0: batch}}
    program = torch.export.export(module.eval(), (torch.zeros(2, 1, 8, 8),), dynamic_shapes=shapes)
    torch.export.save(program, str(path))
    return path


def rewrite_program(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Rewrite the archive's ``models/model.json`` with ``change`` applied."""
    with zipfile.ZipFile(path) as archive:
        members = [(info, archive.read(info.filename)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w") as archive:
        for info, data in members:
            if info.filename.endswith("/models/model.json"):
                program = json.loads(data)
                change(program)
                data = json.dumps(program).encode()
            archive.writestr(info, data)


def hostile_archive(folder: Path) -> tuple[Path, Path]:
    """``folder/tiny.pt2``, ``Tiny`` with a dynamic batch whose size expression writes
    ``folder/written.txt`` when evaluated: the archive and the file it would write."""
    target = folder / "written.txt"
    model = export_to(Tiny(), folder / "tiny.pt2")

    def plant(program: dict[str, Any]) -> None:
        size = program["graph_module"]["graph"]["tensor_values"]["x"]["sizes"][0]
        symbol = size["as_expr"]["expr_str"]
        code = f"__import__('pathlib').Path({str(target)!r}).write_text('x')"
        size["as_expr"]["expr_str"] = f"{code} and {symbol}"

    rewrite_program(model, plant)
    return model, target

"""Write pinbench/environments/converters/<engine>.txt: the hash-pinned environment an engine's
converter runs in, where it cannot run in pinbench's own (``catalog.engines``).

OpenVINO's converter (optimum-intel's ``optimum-cli export openvino``, with openvino-tokenizers
for the tokenizer's models) needs transformers < 5.6, where pinbench's pins 5.23: it runs in an
environment of its own. This resolves the converter's packages into a scratch environment
with uv (pip's indexes: ``environments.uv_tools.pip_index_args``), drops what must not be there,
and pins every installed package to its version and the sha256 of the one wheel pip
downloads for it (CPython 3.11, manylinux x86_64). Run it after changing a converter's version:

    .venv/bin/python scripts/lock_converters.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from lock_environments import pinned_lines  # this folder's: scripts run by their path

OUT = Path(__file__).resolve().parents[1] / "pinbench" / "environments" / "converters"
CONVERTERS = {
    "openvino": {
        "install": [
            "optimum-intel[openvino]==2.2.0",
            "openvino==2026.4.1",
            "openvino-tokenizers==2026.4.1.0",
            "torch==2.13.0",
        ],
        # optimum-intel requires torchvision, whose wheel here is not built for this torch
        # (importing transformers' models then fails: "operator torchvision::nms does not
        # exist"); transformers runs without it, so the environment has none
        "drop": ["torchvision"],
    },
}


def lock(name: str, install: list[str], drop: list[str]) -> str:
    from pinbench.environments.uv_tools import build_env, pip_index_args, uv_binary

    uv = uv_binary()
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp, "venv")
        python = str(venv / "bin" / "python")
        subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
        base = ["--python", python, "--index-strategy", "unsafe-best-match", *pip_index_args()]
        subprocess.run(
            [uv, "pip", "install", "--quiet", *base, *install], check=True, env=build_env()
        )
        if drop:
            subprocess.run(
                [uv, "pip", "uninstall", "--quiet", "--python", python, *drop], check=True
            )
        frozen = subprocess.run(
            [uv, "pip", "freeze", "--python", python], check=True, capture_output=True, text=True
        ).stdout.split()
    header = f"# {name}'s converter's environment: CPython 3.11, linux x86_64, one wheel each.\n"
    return header + pinned_lines(frozen, by="scripts/lock_converters.py", deps=False)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name in sys.argv[1:] or list(CONVERTERS):
        spec = CONVERTERS[name]
        path = OUT / f"{name}.txt"
        path.write_text(lock(name, spec["install"], spec["drop"]))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

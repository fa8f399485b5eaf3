"""Framework artifacts for the framework versions pinbench's extras install, each pinned to
the sha256 of its CPython 3.11 manylinux x86_64 wheel."""

from __future__ import annotations

from pathlib import Path

from pinbench.catalog.files import dump

# name: (version, pip requirement, wheel sha256)
FRAMEWORKS = {
    "onnxruntime": (
        "1.31.0",
        "onnxruntime",
        "d4092b78fc5bab77ce6522393098cdb2535423045ecdcff15cc0d022162d6b66",
    ),
    "torch": (
        "2.13.0",
        "torch",  # the +cpu build: torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl
        "6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b",
    ),
    "tensorflow": (
        "2.21.0",
        "tensorflow-cpu",
        "2b847d217b02ee7731ed91431daf3250daa0196c3c94614d23be27232e6e5b6c",
    ),
}


def write(root: Path, name: str) -> Path:
    version, package, sha = FRAMEWORKS[name]
    return dump(
        root / f"framework-{name}.yaml",
        {
            "kind": "framework",
            "name": name,
            "version": version,
            "description": f"{name} {version}, CPU, CPython 3.11",
            "environments": [
                {
                    "platform": {"arch": "amd64", "device": "cpu"},
                    "python": "3.11",
                    "requirements": [
                        {"name": package, "version": version, "hashes": [f"sha256:{sha}"]}
                    ],
                }
            ],
        },
    )

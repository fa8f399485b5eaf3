"""Training's numeric environment: the same bits on every x86-64 machine with AVX2, Intel or AMD.

Floating-point results depend on the kernels that run, and the libraries pick them by the CPU:
PyTorch's vectorised kernels (ATen), oneDNN's and MKL's use AVX-512 where the CPU has it and
AVX2 where it does not, and OpenBLAS (NumPy, SciPy: scikit-learn's lbfgs) picks a kernel per
CPU family. Sums in another order round differently, and training amplifies the difference: on
an AVX-512 machine the CNN's weights and two of the logistic regressions' came out other than
with AVX2. Each library caps its choice by an environment variable it reads once, when it
loads, so training runs in a child process started with them set. Checked on an AVX-512
machine: pinned, it gives the bits it gives with NumPy and glibc capped to AVX2 as well (as an
AVX2 machine runs); the CNN needs all three of ATen's, oneDNN's and MKL's caps; and the
logistic regressions came out otherwise with two OpenBLAS threads than with one, so every
library gets one. Preparing the data and exporting the weights gave the same bytes with every
library capped down to SSE4.1, so only ``train`` runs pinned.

MKL is pinned to its ``COMPATIBLE`` branch, not ``AVX2``: MKL honours every branch but
``AUTO`` and ``COMPATIBLE`` on Intel CPUs only, and elsewhere falls back to ``AUTO`` without a
word, so ``MKL_CBWR=AVX2`` gave the CNN (its linear layer's SGEMMs) other weights on an AMD
EPYC (``MKL_VERBOSE`` there: ``CNR:AUTO``) than on the Intel machine that wrote the first
``dvc.lock``. ``COMPATIBLE`` is SSE2 without the approximate ``rcpps``/``rsqrtps``, which
MKL documents as giving the same results on Intel and compatible CPUs. Measured on that AMD
machine: with MKL made to take its Intel dispatch (``mkl_serv_intel_cpu_true`` interposed to
return 1), ``AVX2`` gave the Intel machine's weights byte for byte, so ATen, oneDNN and
OpenBLAS under these caps gave the same bits on both vendors and MKL alone differed; with
``COMPATIBLE`` the weights were the same under MKL's Intel and non-Intel dispatch, with NumPy
and glibc capped to AVX2, with ``MKL_ENABLE_INSTRUCTIONS=AVX2``, and beside a busy core.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

from pinbench.errors import SystemFailure

PINNED = {
    "ATEN_CPU_CAPABILITY": "avx2",  # PyTorch's vectorised kernels
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN: PyTorch's convolutions
    "MKL_CBWR": "COMPATIBLE",  # MKL's one cross-vendor reproducible branch: PyTorch's matmuls
    "OPENBLAS_CORETYPE": "Haswell",  # OpenBLAS's AVX2 kernels: NumPy and SciPy
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}
X86_64 = {"x86_64", "amd64"}


class TrainingFailed(SystemFailure):
    def __init__(self, *, code: int, stderr: str) -> None:
        super().__init__(f"training failed (exit {code}): {stderr.strip()[-2000:]}")
        self.code = code
        self.stderr = stderr


def pinned(environ: dict[str, str] | None = None) -> bool:
    """Whether this process runs with the pinned variables (always, off x86-64: there they
    would name instructions the CPU does not have)."""
    env = os.environ if environ is None else environ
    if platform.machine().lower() not in X86_64:
        return True
    return all(env.get(k) == v for k, v in PINNED.items())


def run_pinned(args: list[str]) -> None:
    """``python -m pinbench ARGS`` in a child process with the pinned variables."""
    result = subprocess.run(
        [sys.executable, "-m", "pinbench", *args],
        env={**os.environ, **PINNED},
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise TrainingFailed(code=result.returncode, stderr=result.stderr)

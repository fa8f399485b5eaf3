"""A chat template rendered in a process of its own, under an address-space and a CPU limit:
the catch-all for whatever ``template_bounds``' rules miss (decision 201).

The parent (``Worker``) starts ``python -m pinbench.worker.generation.template_serve``
once per template and speaks JSON lines over its stdin and stdout: first the template (its
source, name, variables and the limits), then one conversation per line, each answered with
the text or the refusal. The child compiles the template, caps its address space at what it
holds after its imports plus ``MAX_MEMORY`` (``RLIMIT_AS``: an allocation past it is a
``MemoryError``, refused), and before each render sets its CPU limit ``MAX_CPU_SECONDS`` past
what it has used (``RLIMIT_CPU``: the kernel kills it). A child that dies is reported as a
refusal naming the template, and the next render starts a fresh one. When the parent exits,
the child reads the end of its input and exits too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import IO, Any

MAX_MEMORY = 2 * 1024**3
"""Bytes of address space a render may add to the child's (a render makes at most 64 Mi
characters, up to 4 bytes each, and lists of as many items)."""
MAX_CPU_SECONDS = 30
"""CPU seconds one render may use (its own deadline, ``template_bounds.MAX_SECONDS``, is 10)."""


class WorkerRefused(Exception):
    """The child refused the template or died rendering it: ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Worker:
    """The parent's side: one child per template, restarted after it dies."""

    def __init__(self, source: str, *, name: str, variables: dict[str, Any]) -> None:
        self._hello = {
            "source": source,
            "name": name,
            "variables": variables,
            "memory": MAX_MEMORY,
            "cpu": MAX_CPU_SECONDS,
        }
        self._process: subprocess.Popen[str] | None = None

    def render(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool) -> str:
        process = self._process or self._start()
        ask = {"messages": messages, "add_generation_prompt": add_generation_prompt}
        try:
            send_line(process.stdin, ask)
            line = process.stdout.readline() if process.stdout else ""
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            self.close()
            raise WorkerRefused(_death(process))
        answer = json.loads(line)
        if "refused" in answer:
            raise WorkerRefused(str(answer["refused"]))
        return str(answer["text"])

    def _start(self) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        process = subprocess.Popen(
            [sys.executable, "-m", "pinbench.worker.generation.template_serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
            encoding="utf-8",
            errors="surrogatepass",
        )
        self._process = process
        send_line(process.stdin, self._hello)
        return process

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin:
            process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout:
            process.stdout.close()

    def __del__(self) -> None:
        self.close()


def send_line(stream: IO[str] | None, message: dict[str, Any]) -> None:
    if stream is None:
        raise BrokenPipeError
    stream.write(json.dumps(message, ensure_ascii=False) + "\n")
    stream.flush()


def _death(process: subprocess.Popen[str]) -> str:
    try:
        code = process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
    if code == -signal.SIGXCPU or code == -signal.SIGKILL:
        return f"killed past its CPU limit ({MAX_CPU_SECONDS} s) or memory"
    if code < 0:
        return f"its render process was killed ({signal.Signals(-code).name})"
    return f"its render process exited ({code})"

"""The child's side of ``template_worker`` (decision 201): compile the template, cap the
address space, render each conversation under a fresh CPU limit, answer in JSON lines."""

from __future__ import annotations

import json
import math
import sys
from typing import IO

from pinbench.worker.generation.template_worker import send_line


def serve(stdin: IO[str], stdout: IO[str]) -> None:
    """The child's side: compile, cap the address space, render each conversation under a
    fresh CPU limit."""
    import resource

    from pinbench.worker.generation.chat_template import ChatTemplate, TemplateRefused

    hello = json.loads(stdin.readline())
    try:
        template = ChatTemplate(hello["source"], name=hello["name"], variables=hello["variables"])
    except TemplateRefused as exc:
        template, refused = None, exc.reason
    with open("/proc/self/statm") as f:
        held = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    memory = held + int(hello["memory"])
    resource.setrlimit(resource.RLIMIT_AS, (memory, resource.getrlimit(resource.RLIMIT_AS)[1]))
    for line in stdin:
        if template is None:
            answer = {"refused": refused}
        else:
            used = resource.getrusage(resource.RUSAGE_SELF)
            cpu = math.ceil(used.ru_utime + used.ru_stime) + int(hello["cpu"])
            hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
            if hard != resource.RLIM_INFINITY:
                cpu = min(cpu, hard)
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, hard))
            ask = json.loads(line)
            try:
                text = template.render_here(
                    ask["messages"], add_generation_prompt=bool(ask["add_generation_prompt"])
                )
                answer = {"text": text}
            except TemplateRefused as exc:
                answer = {"refused": exc.reason}
        send_line(stdout, answer)


if __name__ == "__main__":
    import io

    serve(
        io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogatepass"),
        io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", errors="surrogatepass"),
    )

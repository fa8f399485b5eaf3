"""Help texts and defaults the evaluation commands share (``run``, ``rerun``, ``bisect``),
written out so that ``--help`` imports none of the evaluator (tests/test_cli_imports.py checks
they agree with it)."""

from __future__ import annotations

RUNNER_HELP = (
    "Where to run: auto (docker if the lockfile pins an image and a Docker Engine answers, "
    "else venv), local (this interpreter, as installed), venv (a uv environment from the "
    "framework's hash-pinned requirements, cached by digest), docker (the pinned image)."
)
RERUN_DEFAULT = " Default: the original run's runner."
REPEAT = 3
"""``rerun --repeat``'s default: ``pinbench.evaluator.verdicts.rerun.REPEAT``, written out so that
``--help`` does not import the evaluator (``tests/test_cli_imports.py`` checks they agree)."""
BAND = 0.10
"""``rerun --band``'s default: ``evaluator.verdicts.verdict.BAND`` (checked the same way)."""
MIN_EFFECT = 0.05
"""``bisect --min-effect``'s default: ``evaluator.verdicts.verdict.MIN_EFFECT`` (the same)."""


TRACE_HELP = (
    "Trace level: none; model (pipeline spans: load, preprocess, cold first predict, warm-up, "
    "each timed predict, postprocess); framework (model + the framework profiler's operators); "
    "system (model + CPU, memory and, with NVML, GPU samples); full (all). A traced run's "
    "latencies include the profilers' overhead and are marked traced. "
    "See `pinbench runs trace`."
)

"""``pinbench doctor``: what this machine gives pinbench, each finding with its fix (issue 83).

Each check is one function of ``Place`` (where the machine's facts are read: ``/proc``,
``/sys``, the environment) returning ``Finding``s: ``ok``, ``warn`` (runs can be made, but a
figure or a runner is affected) or ``fail`` (runs cannot be made until it is fixed). The
checks read; the only things they start are the sandbox's own probe (a sandbox started as a
run's worker is, on nothing), ``bwrap --version`` and the container engine's ``docker version``.
"""

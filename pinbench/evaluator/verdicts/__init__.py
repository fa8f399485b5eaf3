"""Verdicts on recorded runs: a rerun's (``rerun``, ``verdict``), a bisection's between two
environments or chains (``bisect``, ``bisect_chain``, ``bisect_judge``), and two runs'
agreement (``parity``)."""

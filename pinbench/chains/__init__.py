"""Model chains (Triton's ensembles): published models pinned in one lockfile, each stage's
inputs wired by name to an earlier stage's outputs, with pinned code between stages where the
shapes need it (issue 50, decision 240); a stage may fan out, called once per feed its code
returns (a detector's boxes) with a ``join`` gathering the calls' outputs, and code may read
the sample file itself (``sample.bytes``, decision 258).

- ``spec``: the request's ``chain`` section and the lockfile's, as data.
- ``wiring``: the chain locked from its stages' manifests, refused at ``pinbench lock`` where
  a wire names nothing, makes a cycle or leaves an input unfed.
- ``signature``: each wire's dtype and shape checked against the ONNX graphs' own signatures
  at ``pinbench lock`` (read as data, nothing executed).
- ``predict`` and ``evaluate``: a run of the chain, each stage's framework call and code timed
  apart (``stage_<name>_latency_*_ns``), the whole chain as the scenario's query, scored by
  the dataset's task on the last stage's outputs.
"""

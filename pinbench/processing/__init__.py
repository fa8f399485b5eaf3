"""Processing as pinned code: a model manifest's ``preprocess`` and ``postprocess`` Python
(MLModelScope's), run by the evaluator as it asks a task (issue 50, decision 220).

The contract, exactly:

- ``preprocess(sample, files) -> dict[str, numpy.ndarray]``: one sample to the model's inputs.
  ``sample`` is the sample as the dataset holds it: a ``pathlib.Path`` to its verified file
  (a dataset of files), its row of the array without the batch axis (``npy``), or its text
  (``text-lines``). ``files`` maps each file of the model artifact (its path in the artifact)
  to a readable local path. It returns one array per input the manifest declares fed from the
  samples, by name, without the batch axis, of the input's ``element_type`` and (where
  declared) ``shape``: pinbench stacks the samples' arrays.
- ``postprocess(outputs, files) -> dict[str, numpy.ndarray]``: one prediction's raw outputs
  (every output of the model by its own name, the batch on axis 0) to the outputs the manifest
  declares, by name, the batch still on axis 0, numbers; the task then scores them as it
  scores any model's.

Neither runs at ``manifest``, ``publish``, ``lock`` or ``verify``: only inside a runner, with
the consent of whoever runs it (``consent``). Preprocessing is done before anything is timed
and cached by its digest (``pre``); post-processing is timed apart, per sample, and recorded as
``postprocess_latency_*_ns`` (``post``). What the code gives is checked against the
declaration before anything is timed (``checks``).
"""

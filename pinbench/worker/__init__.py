"""The worker's side of an evaluation (issue 71, item 6): what runs beside the model, in the
sandbox or a container — ``main`` (the entry, ``python -m pinbench.worker.main``), the
predictors per framework, the input pipeline and its feed, LoadGen's scenarios, the job it is
given and the answers and results it writes — and the data types the host reads them back
with. The host's side (runners, scoring, recording, history, verdicts) is
``pinbench.evaluator``; nothing here imports it (``tests/test_layers.py``)."""

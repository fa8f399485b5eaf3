"""Training benchmarks (Deep500's level 2): one model, one framework, trained to a target.

``TrainingSpec`` (spec.py) holds the optimizer, hyperparameters, epoch cap, quality target,
seed and determinism switches; ``TrainModel``/``TrainData`` (data.py) the start model's files
and the arrays; ``frameworks/`` one module per framework (imported lazily); ``run.train``
runs the shared loop and returns a ``TrainingResult`` (per-epoch records, time to accuracy,
the final weights' bytes and digest). Design: docs/decisions/, decision 108.

The package itself imports nothing, so a request naming a training run is parsed without
NumPy.
"""

"""The built-in benchmark: the evaluations the demo and the DVC pipeline (``dvc.yaml``) run on
the built-in catalog (``jobs``), their table of models x frameworks (``table``), and the
pipeline's publish, evaluate and report stages (``stages``)."""

"""An operator benchmark's spec (``spec.OperatorSpec``), its parameter schema, shapes and
counts, and the request's ``operator`` section (``section``): data, which
``pinbench.operators`` runs."""

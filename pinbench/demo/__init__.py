"""``pinbench demo``: the whole flow on the built-in catalog, as a face of the Python API
(``flow``), with its chapters on bisect, the L0/L2 levels and signed provenance."""

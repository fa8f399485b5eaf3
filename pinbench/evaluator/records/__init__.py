"""A run's record and its history: recording it (``recording``, ``run_blobs``,
``run_outputs``, ``trained_model``), keeping or pruning it (``retention``) and reading it back
(``history``, ``run_view``, ``run_list``, ``run_filter``)."""

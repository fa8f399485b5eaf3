"""What a request and a lockfile embed, as data with its own checks, below the registry: an
operator benchmark (``operators``), a training run (``training``) and its distribution
(``distributed``), a network transformation (``transforms``), the names of a cluster's systems
(``system_names``). They import only pinbench's base (errors, bounds, typed decoding): the
registry parses and locks them without importing the operators, trainers or transformations
that run them, which import their specs from here."""

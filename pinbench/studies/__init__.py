"""Studies (``pinbench study``): a matrix of models x frameworks x scenarios x systems, one
lockfile and one recorded run per cell, and the analyses MLModelScope's case studies draw.

- ``spec``: the study file, parsed and checked before anything runs;
- ``cells``: the cells a study expands to, each an evaluation request;
- ``store``: studies and their cells in the database (what ``study run`` resumes from);
- ``execute``: locking and running the cells in turn, on this machine's configurations;
- ``matrix``: the cells with their runs' figures (``study show``);
- ``analyses`` and ``report``: the Pareto fronts, speed-ups, latency against throughput and
  batch sweeps, with their outliers, as an HTML page (``study report``);
- ``figures``: every number a study shows, through the one figure rule.
"""

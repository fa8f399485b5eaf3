"""Voice-activity detection (task ``voice-activity``, decision 128): a streamed model's
per-frame speech probability scored against speech segments (``truth``) turned into frames
(``frames``), by frame-level precision, recall, F1 at the output's threshold and ROC-AUC
(``metrics``)."""

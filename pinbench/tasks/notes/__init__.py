"""Note transcription (task ``note-transcription``, decision 282): each audio file's notes, as
the model gives them (its ``postprocess`` code turning posteriorgrams into note events, as
basic-pitch's own ``model_output_to_notes`` does), matched to the file's reference notes by
mir_eval's rule and scored by note-level precision, recall and F1, onsets only and with
offsets (``truth``, ``matching``, ``metrics``)."""

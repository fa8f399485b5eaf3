"""Tasks whose answers are signals: a waveform (``audio-to-audio``: speech enhancement, source
separation, vocoders) or an image (``image-to-image``: super-resolution, denoising), scored
against a reference signal per sample (issue 86, item 2)."""

"""image-to-image: its declarations (``declared``); the task is ``tasks.signals``."""

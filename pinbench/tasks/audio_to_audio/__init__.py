"""audio-to-audio: its declarations (``declared``); the task is ``tasks.signals``."""

"""The tasks pinbench knows, by the name a dataset's ``task:`` gives: where each one's class is
(``module:Class``), imported by ``registry.task`` only when the task is asked for. Data, apart
from the registry, so that ``metrics`` reads it without importing the registry."""

from __future__ import annotations

TASKS: dict[str, str] = {
    "classification": "pinbench.tasks.classification.task:Classification",
    "sentence-similarity": "pinbench.tasks.similarity.task:SentenceSimilarity",
    "detection": "pinbench.tasks.detection.task:Detection",
    "segmentation": "pinbench.tasks.segmentation.task:Segmentation",
    "text-recognition": "pinbench.tasks.text_recognition.task:TextRecognition",
    "voice-activity": "pinbench.tasks.vad.task:VoiceActivity",
    "text-generation": "pinbench.tasks.generation.task:TextGeneration",
    "speech-recognition": "pinbench.tasks.speech.task:SpeechRecognition",
    "speaker-verification": "pinbench.tasks.speaker.task:SpeakerVerification",
    "note-transcription": "pinbench.tasks.notes.task:NoteTranscription",
    "token-classification": "pinbench.tasks.tokens.task:TokenClassification",
    "question-answering": "pinbench.tasks.question_answering.task:QuestionAnswering",
    "audio-to-audio": "pinbench.tasks.signals.task:AudioToAudio",
    "image-to-image": "pinbench.tasks.signals.task:ImageToImage",
    "other": "pinbench.tasks.classification.task:Other",
}

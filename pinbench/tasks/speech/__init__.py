"""Speech recognition (speech-to-text, decision 246): an encoder-decoder (Whisper) reads each
sample's audio as log-mel features and generates its transcript token by token; the decoded
text is scored against the sample's reference with WER and CER.

**Samples**: a folder of PCM WAV files (``data.format: audio``), in path order.

**Ground truth**: one transcript per sample, read as text recognition reads its texts
(``pinbench.tasks.text_recognition``): ``transcript-txt`` (one line per sample, in sample
order), ``transcript-csv`` (columns ``file``, ``text``) or ``transcript-jsonl``
(``{"file": ..., "text": ...}``), the latter two by file name.

**Metrics** (``tasks.speech.metrics``, decisions 247 and 277), by the host: ``wer`` and ``cer``
by jiwer 4's ``wer``/``cer`` with their default transforms (corpus-level; CER over each text
stripped; WER over words split on single spaces after whitespace runs are collapsed and the
text stripped; no case folding), not text recognition's (texts as written), and
``exact_match`` over the stripped texts, all over the decoded answers (special tokens skipped,
as transformers' ``batch_decode(skip_special_tokens=True)`` gives them). Undefined (the run
fails) where the references hold no word or no character.
"""

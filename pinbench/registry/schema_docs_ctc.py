"""Descriptions of a CTC output's fields and of the waveform normalisation step (the heads
of decision 281), kept apart from ``schema_docs_ports`` to keep each module short."""

from __future__ import annotations

CTC_DOCS: dict[str, dict[str, str]] = {
    "ZeroMeanUnitVar": {
        "epsilon": "Added to the variance before its square root: 1e-7 (transformers' "
        "constant), 1e-12 to 1.",
    },
    "Ctc": {
        "blank": "The class index of CTC's blank (0 in PaddleOCR's recognisers), 0..999999; "
        "required: never assumed. The other classes are the alphabet's entries in order, "
        "then the space.",
        "alphabet": "Where the characters are: a file of the model or an ONNX metadata entry, "
        "one per line, or a vocab JSON file of the model (token to class id).",
        "space": "true: a space class follows the alphabet's (PaddleOCR's use_space_char); "
        "false by default. The output's classes must be the alphabet's entries + 1 (the "
        "blank) + 1 (the space, if set), checked before anything is timed.",
        "word_delimiter": "The alphabet's entry that separates words (a Hugging Face CTC "
        "tokenizer's word_delimiter_token, '|'): decoded as a space, the text then stripped "
        "of spaces at its ends, as the tokenizer decodes. Publish refuses an alphabet that "
        "holds the word_delimiter_token of the model's tokenizer_config.json undeclared. "
        "Left out of the stored manifest while unset.",
    },
    "CtcAlphabet": {
        "file": "A file of the model (same path rules as a file entry): UTF-8, one character "
        "per line as PaddleOCR's dict files, LF or CRLF, an empty line refused.",
        "metadata": "An ONNX model's metadata_props key whose value holds the characters one "
        "per line (rapidocr's PP-OCR recognisers: 'character'); read from the file's bytes "
        "at publish and before a run, never by loading the model.",
        "vocab": "A JSON file of the model mapping each token to its class id (a Hugging Face "
        "CTC tokenizer's vocab.json): the classes are its tokens in id order, ids exactly 0 "
        "to n - 1, the blank's among them. Left out of the stored manifest while unset.",
    },
}

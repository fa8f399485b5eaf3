"""Text recognition (OCR): a model reads the text of each sample (a cropped text line) and
its output, decoded, is compared with the sample's text.

**Ground truth** (``truth``): one string per sample, from ``labels.format``

- ``text-txt``: one line per sample, in sample order (``worker.lines``: UTF-8, LF or CRLF
  line ends, the line exactly as written: no trimming, no Unicode normalisation); a blank or
  whitespace-only line is refused (a sample of no text needs text-csv or text-jsonl);
- ``text-csv``: a header naming the columns ``file`` and ``text`` (others are not read), one
  row per sample file, paths relative to the data folder;
- ``text-jsonl``: one ``{"file": ..., "text": ...}`` object per line, likewise.

By file name, a sample labelled twice, a row naming no sample file and a sample with no row
are refused, naming the file and the row. A text holds at most ``MAX_TEXT_CHARS`` characters.

**Output** (``ctc``): a ``type: text`` output ``(N, T, C)`` (samples, time steps, classes) is
decoded greedily: each time step's class is its argmax (the first on ties), repeats are
collapsed, then the blank class (its index declared as ``ctc.blank``) is dropped; every other
class is one entry of the alphabet (a file of the model, or an ONNX metadata entry), in
order, then a space where ``ctc.space`` is set. C must be the alphabet's length + 1 (+ 1):
checked on the first answer, before anything is timed (``ctc``).

**Metrics** (``metrics``), over the samples scored, corpus-level (sums, then one division):

- ``cer``: the sum over samples of the Levenshtein distance (insertions, deletions and
  substitutions, each 1) between the decoded string and the reference, in Unicode code
  points, divided by the sum of the references' lengths in code points; case, whitespace and
  punctuation count as written. It may exceed 1. Undefined when the references hold no
  character: the run fails (``UndefinedMetric``).
- ``wer``: likewise over words, a word being a maximal run of non-whitespace characters
  (Python's ``str.split()``); undefined when the references hold no word.
- ``exact_match``: the share of samples whose decoded string equals the reference.

A run records the best path per sample (its class index per time step, ``(N, T)``; samples
fed one at a time at sizes of their own may have fewer steps: padded with the blank) as its
outputs, and the first samples' decoded texts in ``details.samples`` (``sample``, ``truth``,
``text``, ``right``).
"""

MAX_TEXT_CHARS = 10_000
"""The longest reference text, in code points (a printed page holds some 3,000): the edit
distance costs the product of the two lengths."""

"""llama.cpp's own converter (``convert_hf_to_gguf.py`` of the pinned source archive) run on a
Hugging Face folder whose byte-level BPE it does not know by name (``catalog.engines``).

Run as a script, not imported: ``python gguf_convert.py LLAMA_CPP_DIR IN [the converter's own
arguments]``. The converter names a BPE tokenizer's pre-tokenizer by hashing the ids of a test
text against a table of known models, and refuses a tokenizer trained elsewhere. Where it
does, and the folder's ``tokenizer.json`` pre-tokenizes exactly as GPT-2 does (its
``ByteLevel`` with GPT-2's regular expression and no prefix space), this names it ``gpt-2``,
llama.cpp's name for that pre-tokenizer; any other is refused as the converter refuses it.
Everything else is the converter's own code, unchanged.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path
from typing import Any

GPT2_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}


def main(argv: list[str]) -> None:
    source, folder, *arguments = argv
    sys.path.insert(0, source)
    from conversion.base import TextModel  # type: ignore[import-not-found]

    known = TextModel.get_vocab_base_pre

    def pre_tokenizer(self: Any, tokenizer: Any) -> str:
        try:
            return str(known(self, tokenizer))
        except NotImplementedError:
            spec = json.loads((Path(folder) / "tokenizer.json").read_text()).get("pre_tokenizer")
            if isinstance(spec, dict) and {k: spec.get(k) for k in GPT2_BYTE_LEVEL} == (
                GPT2_BYTE_LEVEL
            ):
                return "gpt-2"
            raise

    TextModel.get_vocab_base_pre = pre_tokenizer
    outfile = Path(arguments[arguments.index("--outfile") + 1])
    outfile.parent.mkdir(parents=True, exist_ok=True)
    sys.argv = [str(Path(source) / "convert_hf_to_gguf.py"), folder, *arguments]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])

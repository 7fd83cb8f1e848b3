#!/usr/bin/env python3
"""Real text as uint16 token ids, for the compressed-token benchmarks (issue 27's goal: "real text
as uint16 token ids; say which text and which tokenizer").

The text: the Linux kernel's documentation as Debian ships it (package linux-doc-6.1: every
Documentation/**/*.rst and *.txt, about 24 MB of English technical prose, read in sorted path
order). The tokenizer: a SentencePiece BPE model of 32,000 pieces (Debian's python3-sentencepiece)
trained on that text here, so every id fits uint16. Writes OUT/tokens.u16 (little-endian uint16
ids, documents in order, each ended by the model's </s> id), OUT/tokenizer.model and
OUT/corpus.json (the counts and the exact source). tools/bench/run.py's codecs part replicates
the ids to the size it needs on the device (the machine there has no network; `tools/bench/carry.sh
tokens` stores them as .carry/tokens/tokens.rfd to carry there).

    apt-get install linux-doc-6.1 python3-sentencepiece
    /usr/bin/python3 tools/bench/make_token_corpus.py .carry/tokens
"""

import argparse
import gzip
import json
import os
import sys
from pathlib import Path

import numpy as np
import sentencepiece as spm

DOCS = Path("/usr/share/doc/linux-doc-6.1/Documentation")


def documents():
    for path in sorted(DOCS.rglob("*")):
        if path.suffixes[-2:] in ([".rst", ".gz"], [".txt", ".gz"]):
            text = gzip.decompress(path.read_bytes()).decode("utf-8", "replace").strip()
            if text:
                yield path, text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--vocab", type=int, default=32000)
    a = ap.parse_args()
    if not DOCS.is_dir():
        sys.exit(f"{DOCS} is missing: apt-get install linux-doc-6.1")
    a.out.mkdir(parents=True, exist_ok=True)
    docs = list(documents())
    text_path = a.out / "corpus.txt"
    with open(text_path, "w") as f:
        for _, t in docs:
            f.write(t.replace("\r", "") + "\n")
    prefix = str(a.out / "tokenizer")
    spm.SentencePieceTrainer.train(input=str(text_path), model_prefix=prefix,
                                   vocab_size=a.vocab, model_type="bpe",
                                   input_sentence_size=2_000_000, shuffle_input_sentence=True,
                                   num_threads=os.cpu_count(), minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    assert sp.get_piece_size() <= 65536
    eos = sp.eos_id()
    ids = []
    for _, t in docs:
        ids.extend(sp.encode(t))
        ids.append(eos)
    arr = np.asarray(ids, dtype="<u2")
    arr.tofile(a.out / "tokens.u16")
    text_path.unlink()
    (a.out / "tokenizer.vocab").unlink(missing_ok=True)
    meta = {"text": "Debian linux-doc-6.1: Documentation/**/*.rst.gz and *.txt.gz, sorted",
            "documents": len(docs), "text_bytes": sum(len(t.encode()) for _, t in docs),
            "tokenizer": f"SentencePiece BPE, {sp.get_piece_size()} pieces, trained on the text",
            "tokens": int(arr.size), "dtype": "uint16", "eos_id": eos}
    (a.out / "corpus.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())

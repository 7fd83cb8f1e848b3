#!/usr/bin/env python3
"""A text corpus through any tokenizer into a ringfeed tokens dataset, one record a document.

    examples/tokenize_corpus.py --model spm.model corpus/*.txt -o corpus.rfd
    examples/tokenize_corpus.py --model spm.model notes.txt --split lines --compress zstd -o n.rfd
    examples/tokenize_corpus.py --train-vocab 4000 --model spm.model corpus/*.txt -o corpus.rfd

The tokenizer here is SentencePiece (Debian's python3-sentencepiece): --model loads a trained
model; --train-vocab N first trains a BPE model of N pieces on the same text and saves it there.
Any other tokenizer fits the same loop: whatever turns a document's text into a list of ids.

Each file (--split lines: each non-empty line) is a document: its ids, then the model's
end-of-sentence id where it has one (--no-eos: none), written through
ringfeed.DatasetWriter(records="tokens") as uint16 where the vocabulary has at most 65536 ids,
else int32, without labels. A document that tokenizes to nothing is skipped and counted (a record
holds one id at least). ringfeed-convert reads Megatron's files, .npy documents, JSON lines of
ids and text through its byte tokenizer itself (docs/format.md).
"""

import argparse
import sys

import ringfeed


def documents(paths, split_lines):
    """The corpus's documents, in the order given: each file's text, or each line of it."""
    for path in paths:
        with open(path, encoding="utf-8") as f:
            if split_lines:
                for line in f:
                    if line.strip():
                        yield line.rstrip("\n")
            else:
                yield f.read()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("inputs", nargs="+", help="text files (UTF-8)")
    p.add_argument("-o", "--output", required=True, help="the dataset to write (OUT.rfd)")
    p.add_argument("--model", required=True, help="the SentencePiece model (.model)")
    p.add_argument("--train-vocab", type=int, default=0,
                   help="train a BPE model of this many pieces on the inputs first, saved as "
                        "--model")
    p.add_argument("--split", choices=("files", "lines"), default="files",
                   help="a document a file, or a document a line")
    p.add_argument("--no-eos", action="store_true", help="append no end-of-sentence id")
    p.add_argument("--compress", default="none", help="none, lz4, zstd or zstd:LEVEL")
    p.add_argument("--chunk-size", default="4MiB", help="target chunk size")
    args = p.parse_args(argv)

    try:
        import sentencepiece as spm
    except ImportError:
        print("tokenize_corpus.py: needs sentencepiece (Debian: python3-sentencepiece)",
              file=sys.stderr)
        return 2
    if args.train_vocab:
        prefix = args.model[:-len(".model")] if args.model.endswith(".model") else args.model
        spm.SentencePieceTrainer.train(input=",".join(args.inputs), model_prefix=prefix,
                                       vocab_size=args.train_vocab, model_type="bpe",
                                       minloglevel=2)
        args.model = prefix + ".model"
    sp = spm.SentencePieceProcessor(model_file=args.model)
    vocab = sp.get_piece_size()
    eos = -1 if args.no_eos else sp.eos_id()
    dtype = "uint16" if vocab <= 65536 else "int32"

    import numpy as np  # the arrays the writer takes

    written = skipped = ids = 0
    with ringfeed.DatasetWriter(args.output, records="tokens", dtype=dtype, labels=False,
                                compress=args.compress, chunk_size=args.chunk_size) as w:
        for text in documents(args.inputs, args.split == "lines"):
            doc = sp.encode(text)
            if not doc:  # nothing but what the model drops (white space): no record
                skipped += 1
                continue
            if eos >= 0:
                doc.append(eos)
            w.write(np.asarray(doc, dtype=dtype))
            written += 1
            ids += len(doc)
    print(f"wrote {args.output}: {written} documents, {ids} ids as {dtype} "
          f"(vocabulary {vocab}, end-of-sentence id {eos if eos >= 0 else 'none'})"
          + (f"; skipped {skipped} empty documents" if skipped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

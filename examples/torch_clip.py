#!/usr/bin/env python3
"""A small CLIP-style image-text contrastive model trained on image-caption pairs via ringfeed.

    examples/torch_clip.py                                  # a demo set it writes itself
    examples/torch_clip.py --pairs SHARD.tar ... --epochs 5 # WebDataset shards of KEY.jpg and
                                                            # KEY.txt, tokenized at conversion
    examples/torch_clip.py --data pairs.rfd --device cuda   # a dataset this wrote before

The data. A dataset of samples of several fields: the image (`jpg`, JPEG, PNG or WebP bytes) and
its caption's token ids (`txt`, int32), written once by ringfeed.DatasetWriter(fields={"jpg":
"image/*", "txt": "tokens:int32"}): --pairs reads WebDataset tar shards (each KEY.jpg, .jpeg,
.png or .webp with its KEY.txt); without --pairs or --data, a demo set of --demo-samples
pictures of a coloured shape with a caption saying which ("a red circle at the top left"). The
captions are tokenized at conversion by SentencePiece (Debian's python3-sentencepiece): a BPE
model of --vocab pieces trained on the captions themselves, saved beside the dataset (.model);
--tokenizer bytes takes their UTF-8 bytes instead (256 ids, no model).

The loader. ringfeed.Loader(data, batch_size, image_size=S) hands out each batch as a dict by
field name: batch["jpg"] the images decoded, random-resized-cropped and flipped (--image-crop
center: resized and centre-cropped) to S x S, normalized with ImageNet's mean and std (on a GPU
bfloat16 (n, S, S, 3), whose NCHW view the model takes, channels_last, no copy; on the CPU
float32 (n, 3, S, S)); batch["txt"] the captions as (values, offsets): sample i's ids are
values[offsets[i]:offsets[i + 1]], which torch.nn.EmbeddingBag takes as they are. Every field of
a sample is its own (the loader's order is the sample's, not the field's).

The model. An image encoder (three conv-BN-ReLU stages, global average pooling, a projection) and
a text encoder (EmbeddingBag's mean of the caption's token embeddings, two linear layers), both
to --dim, L2-normalized; the symmetric InfoNCE loss over the batch (each image's caption among
the batch's captions, and each caption's image) with a learned temperature, AdamW. bf16
autocast on a GPU. --fixed-batch trains on the first batch again and again (the model's compute
alone, no loader: what the fed rate is measured against).

Each --print-every steps it prints the loss; at each epoch's end "epoch E: N samples, D distinct,
captions checked" (with --check-captions, every caption of the epoch compared with the one
written for its sample index) and the top-1 retrieval accuracy of that epoch's batches (the share
of images whose own caption scores highest in their batch); at the end the rate in samples/s.
"""

import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_train  # noqa: E402  (pick_device: the --device rule every example keeps)

import ringfeed  # noqa: E402

COLOURS = {"red": (220, 40, 40), "green": (40, 180, 60), "blue": (50, 80, 230),
           "yellow": (230, 210, 40)}
SHAPES = ("circle", "square", "triangle")
PLACES = {"top left": (0.3, 0.3), "top right": (0.7, 0.3), "bottom left": (0.3, 0.7),
          "bottom right": (0.7, 0.7)}


def demo_pairs(n, seed=5, side=0):
    """n (JPEG bytes, caption) of a coloured shape on a noisy ground, each caption saying it;
    `side`: pictures of side to 1.5 x side pixels (0: 56 to 95)."""
    import io

    from PIL import Image, ImageDraw
    rng = np.random.default_rng(seed)
    colours, places = list(COLOURS), list(PLACES)
    for i in range(n):
        colour = colours[rng.integers(len(colours))]
        shape = SHAPES[rng.integers(len(SHAPES))]
        place = places[rng.integers(len(places))]
        side_i = int(rng.integers(56, 96)) if side == 0 else int(rng.integers(side, side * 3 // 2))
        img = Image.fromarray(rng.integers(90, 150, (side_i, side_i, 3), dtype=np.uint8))
        d = ImageDraw.Draw(img)
        cx, cy = (int(side_i * f) for f in PLACES[place])
        r = side_i // 5
        box = (cx - r, cy - r, cx + r, cy + r)
        if shape == "circle":
            d.ellipse(box, fill=COLOURS[colour])
        elif shape == "square":
            d.rectangle(box, fill=COLOURS[colour])
        else:
            d.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=COLOURS[colour])
        out = io.BytesIO()
        img.save(out, format="JPEG", quality=90)
        yield out.getvalue(), f"a {colour} {shape} at the {place}"


def tar_pairs(paths):
    """(image bytes, caption) of each WebDataset sample holding an image and a .txt, in order."""
    import tarfile
    for path in paths:
        with tarfile.open(path) as tar:
            key, image, caption = None, None, None
            for m in tar:
                if not m.isfile():
                    continue
                k, _, ext = m.name.partition(".")
                if k != key:
                    if image is not None and caption is not None:
                        yield image, caption
                    key, image, caption = k, None, None
                data = tar.extractfile(m).read()
                if ext.lower() in ("jpg", "jpeg", "png", "webp"):
                    image = data
                elif ext == "txt":
                    caption = data.decode("utf-8").strip()
            if image is not None and caption is not None:
                yield image, caption


class ByteTokenizer:
    """--tokenizer bytes: a caption's UTF-8 bytes as its ids (256 of them)."""

    def encode(self, text):
        return list(text.encode("utf-8"))

    def decode(self, ids):
        return bytes(ids).decode("utf-8", errors="replace")

    def get_piece_size(self):
        return 256


def tokenizer_of(stem):
    """The tokenizer a dataset's captions were written with: STEM.model's SentencePiece model,
    or the bytes where there is none."""
    if not os.path.exists(stem + ".model"):
        return ByteTokenizer()
    import sentencepiece as spm
    return spm.SentencePieceProcessor(model_file=stem + ".model")


def write_dataset(pairs, out, vocab, tokenizer):
    """The pairs as a dataset of samples of two fields, the captions tokenized by a SentencePiece
    BPE model of `vocab` pieces trained on them (saved as OUT's stem + .model), or (tokenizer
    "bytes") as their UTF-8 bytes; its path."""
    pairs = list(pairs)
    if not pairs:
        raise SystemExit("torch_clip.py: no image with a caption in the input")
    stem = out[:-len(".rfd")] if out.endswith(".rfd") else out
    if os.path.exists(stem + ".model"):
        os.unlink(stem + ".model")
    if tokenizer == "spm":
        try:
            import sentencepiece as spm
        except ImportError:
            raise SystemExit("torch_clip.py: needs sentencepiece (Debian: python3-sentencepiece),"
                             " or --tokenizer bytes")
        spm.SentencePieceTrainer.train(sentence_iterator=iter([c for _, c in pairs]),
                                       model_prefix=stem, vocab_size=vocab, model_type="bpe",
                                       minloglevel=2, hard_vocab_limit=False)
    tok = tokenizer_of(stem)
    with ringfeed.DatasetWriter(out, fields={"jpg": "image/*", "txt": "tokens:int32"},
                                chunk_size="1MiB") as w:
        for image, caption in pairs:
            w.write({"jpg": image, "txt": np.asarray(tok.encode(caption), dtype=np.int32)})
    return out


class ImageEncoder(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        layers, width = [], 3
        for out in (32, 64, 128):
            layers += [torch.nn.Conv2d(width, out, 3, stride=2, padding=1, bias=False),
                       torch.nn.BatchNorm2d(out), torch.nn.ReLU(inplace=True)]
            width = out
        self.body = torch.nn.Sequential(*layers)
        self.proj = torch.nn.Linear(width, dim)

    def forward(self, x):
        return self.proj(self.body(x).mean(dim=(2, 3)))


class TextEncoder(torch.nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = torch.nn.EmbeddingBag(vocab, dim, mode="mean", include_last_offset=True)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, dim), torch.nn.ReLU(),
                                       torch.nn.Linear(dim, dim))

    def forward(self, ids, offsets):
        return self.mlp(self.embed(ids, offsets))


def image_encoder(name, dim):
    """The small CNN, or torchvision's ResNet (its classifier the projection to dim)."""
    if name == "small":
        return ImageEncoder(dim)
    import torchvision
    return getattr(torchvision.models, name)(num_classes=dim)


class Clip(torch.nn.Module):
    def __init__(self, vocab, dim, encoder="small"):
        super().__init__()
        self.image, self.text = image_encoder(encoder, dim), TextEncoder(vocab, dim)
        self.log_scale = torch.nn.Parameter(torch.tensor(np.log(10.0), dtype=torch.float32))

    def forward(self, images, ids, offsets):
        a = F.normalize(self.image(images), dim=1)
        b = F.normalize(self.text(ids, offsets), dim=1)
        return a @ b.t() * self.log_scale.exp().clamp(max=100)


def contrastive_loss(logits):
    target = torch.arange(logits.shape[0], device=logits.device)
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target)) / 2


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", help="a dataset of jpg and txt fields this wrote before")
    p.add_argument("--pairs", nargs="+", help="WebDataset .tar shards of KEY.jpg and KEY.txt")
    p.add_argument("--work", default="clip-work", help="where the dataset is written")
    p.add_argument("--demo-samples", type=int, default=2000)
    p.add_argument("--vocab", type=int, default=64, help="SentencePiece pieces")
    p.add_argument("--tokenizer", choices=("spm", "bytes"), default="spm",
                   help="the captions' tokenizer at conversion: SentencePiece, or UTF-8 bytes")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: none)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--image-size", type=int, default=48)
    p.add_argument("--image-crop", choices=("random", "center"), default="random")
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--threads", type=int, default=0, help="torch's CPU threads (0: its own)")
    p.add_argument("--print-every", type=int, default=20)
    p.add_argument("--check-captions", action="store_true",
                   help="compare every caption with the one written for its sample")
    p.add_argument("--fixed-batch", action="store_true",
                   help="train on the first batch only: the model's compute alone")
    p.add_argument("--encoder", choices=("small", "resnet18", "resnet50"), default="small",
                   help="the image encoder: the small CNN or torchvision's ResNet")
    p.add_argument("--demo-side", type=int, default=0,
                   help="demo pictures of this side to 1.5x it (0: 56 to 95 pixels)")
    p.add_argument("--warm", type=int, default=0,
                   help="steps before the rate's clock starts (cuDNN's choices, nvJPEG's start)")
    p.add_argument("--json", action="store_true", help="the rate as one JSON line at the end")
    p.add_argument("--image-decoder", choices=("auto", "cpu", "nvjpeg"), default="auto",
                   help="the loader's image decoder (on a GPU: nvJPEG and the CPU threads)")
    args = p.parse_args(argv)
    if args.batch_size < 2 or args.epochs < 1 or args.steps < 0:
        p.error("--batch-size must be at least 2 (a contrastive batch), --epochs at least 1")
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch_train.pick_device(args.device)
    gpu = dev.type == "cuda"
    data = args.data
    if data is None:
        os.makedirs(args.work, exist_ok=True)
        data = os.path.join(args.work, "pairs.rfd" if args.pairs else "demo.rfd")
        if args.pairs or not os.path.exists(data):
            pairs = (tar_pairs(args.pairs) if args.pairs
                     else demo_pairs(args.demo_samples, side=args.demo_side))
            write_dataset(pairs, data, args.vocab, args.tokenizer)
    info = ringfeed.dataset_info(data)
    fields = dict(info.fields)
    if fields.get("txt", "").split(":")[0] != "tokens" or "jpg" not in fields:
        raise ringfeed.UsageError(f"{data}: samples of a jpg image and txt token ids, not "
                                  f"{fields or info.record_kind}")
    stem = data[:-len(".rfd")] if data.endswith(".rfd") else data
    tok = tokenizer_of(stem)
    check = None
    if args.check_captions:
        captions = ([c for _, c in demo_pairs(info.samples, side=args.demo_side)]
                    if not args.pairs else None)
        check = (tok, captions)
    vocab = tok.get_piece_size()

    loader = ringfeed.Loader(data, args.batch_size, device=dev.type, image_size=args.image_size,
                             image_crop=args.image_crop, image_decoder=args.image_decoder,
                             dtype="bfloat16" if gpu else "float32",
                             layout="NHWC" if gpu else "NCHW", normalize=True,
                             mean=(123.675, 116.28, 103.53), std=(58.395, 57.12, 57.375),
                             seed=args.seed, drop_last=True)
    model = Clip(vocab, args.dim, args.encoder).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)

    def tensors(batch):
        images = torch.from_dlpack(batch["jpg"])
        # On a GPU the loader writes bfloat16 NHWC: its NCHW view is channels_last, no copy.
        images = images.permute(0, 3, 1, 2) if gpu else images.contiguous(
            memory_format=torch.channels_last)
        ids, offsets = (torch.from_dlpack(t) for t in batch["txt"])
        return images, ids.long(), offsets

    clock = {"step": 0, "seen": 0, "start": time.perf_counter()}

    def step_on(images, ids, offsets):
        """One optimizer step; the logits. The rate counts the steps after the warm ones."""
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16,
                            enabled=dev.type == "cuda"):
            logits = model(images, ids, offsets)
            loss = contrastive_loss(logits.float())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        clock["step"] += 1
        if clock["step"] == args.warm:
            if dev.type == "cuda":
                torch.cuda.synchronize()
            clock.update(seen=0, start=time.perf_counter())
        elif clock["step"] > args.warm:
            clock["seen"] += images.shape[0]
        if args.print_every and clock["step"] % args.print_every == 0:
            print(f"step {clock['step']}: loss {loss.item():.4f}", flush=True)
        return logits

    def done():
        return args.steps and clock["step"] >= args.steps

    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        indices, hits, total = [], 0, 0
        for batch in loader:
            if check is not None:
                tok, captions = check
                ids, offsets = (np.from_dlpack(t) if dev.type == "cpu" else
                                torch.from_dlpack(t).cpu().numpy() for t in batch["txt"])
                for k, g in enumerate(batch["txt"][0].indices):
                    text = tok.decode(ids[offsets[k]:offsets[k + 1]].tolist())
                    if captions is not None and text != captions[g]:
                        raise SystemExit(f"sample {g}: caption {text!r}, written "
                                         f"{captions[g]!r}")
            indices += list(batch["txt"][0].indices)
            if args.fixed_batch:
                break
            logits = step_on(*tensors(batch))
            with torch.no_grad():
                hits += int((logits.argmax(dim=1) == torch.arange(logits.shape[0],
                                                                  device=dev)).sum())
                total += logits.shape[0]
            if done():
                break
        if args.fixed_batch:
            # The first batch on the device, and the loader left alone: the model's compute.
            fixed = tuple(t.clone() for t in tensors(batch))
            while not done() and clock["step"] < args.epochs * len(loader):
                step_on(*fixed)
            break
        print(f"epoch {epoch}: {len(indices)} samples, {len(set(indices))} distinct"
              f"{', captions checked' if check is not None else ''}; top-1 retrieval in batch "
              f"{hits / max(total, 1):.3f} (chance {1 / args.batch_size:.3f})", flush=True)
        if done():
            break
    step, seen, start = clock["step"], clock["seen"], clock["start"]
    if dev.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(f"trained {step} steps, {seen} samples after the {args.warm} warm in {seconds:.2f} s: "
          f"{seen / seconds:.0f} samples/s"
          f"{' (one fixed batch: compute alone)' if args.fixed_batch else ''}")
    if args.json:
        import json
        print(json.dumps({"samples_per_s": round(seen / seconds, 1), "steps": step,
                          "warm": args.warm, "fixed_batch": args.fixed_batch,
                          "encoder": args.encoder, "stats": loader.stats()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Samples of several fields from ringfeed.DatasetWriter(fields=...) to ringfeed.Loader: each
batch a dict by field name, each field as its kind comes alone (an image decoded, or its bytes as
(values, offsets); token ids as (values, offsets); a tensor; the label), every field of a sample
that sample's own, once an epoch, through a resume; dataset_info shows the fields; what a sample
cannot be is refused naming it."""

import io

import numpy as np
import pytest

import ringfeed
from ringfeed import UsageError

FIELDS = {"jpg": "image/jpeg", "txt": "tokens:int32", "emb": "tensor:float32:4",
          "json": "application/json", "cls": "label"}


def jpeg(i):
    from PIL import Image
    rng = np.random.default_rng(i)
    img = Image.fromarray(rng.integers(0, 255, size=(40 + i % 30, 50, 3), dtype=np.uint8))
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=90)
    return out.getvalue()


def sample(i):
    return {"jpg": jpeg(i), "txt": np.arange(i % 6, dtype=np.int32) + 10 * i,
            "emb": np.full(4, i, dtype=np.float32), "json": f'{{"i": {i}}}', "cls": i % 3}


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    path = tmp_path_factory.mktemp("fields") / "pairs.rfd"
    with ringfeed.DatasetWriter(str(path), fields=FIELDS, chunk_size="16KiB",
                                compress="zstd") as w:
        assert w.fields == FIELDS
        w.write([sample(i) for i in range(40)])  # a list of samples
        for i in range(40, 70):
            w.write(sample(i))  # one sample
    return str(path)


def check(batch, decoded):
    """Every field of the batch against its samples' own; their indices."""
    assert list(batch) == list(FIELDS)
    txt, txt_off = (np.from_dlpack(t) for t in batch["txt"])
    emb = np.from_dlpack(batch["emb"])
    meta, meta_off = (np.from_dlpack(t) for t in batch["json"])
    cls = np.from_dlpack(batch["cls"])
    indices = list(batch["cls"].indices)
    assert txt.dtype == np.int32 and emb.shape == (len(indices), 4) and cls.dtype == np.int64
    for k, g in enumerate(indices):
        want = sample(g)
        assert np.array_equal(txt[txt_off[k]:txt_off[k + 1]], want["txt"])
        assert np.array_equal(emb[k], want["emb"])
        assert meta[meta_off[k]:meta_off[k + 1]].tobytes().decode() == want["json"]
        assert cls[k] == g % 3
        if not decoded:
            v, o = (np.from_dlpack(t) for t in batch["jpg"])
            assert v[o[k]:o[k + 1]].tobytes() == want["jpg"]
    if decoded:
        assert tuple(np.from_dlpack(batch["jpg"]).shape) == (len(indices), 3, 24, 24)
    return indices


def test_dataset_info_shows_the_fields(pairs):
    info = ringfeed.dataset_info(pairs)
    assert info.record_kind == "fields" and info.classes == 3 and info.samples == 70
    assert info.fields == tuple(FIELDS.items())


@pytest.mark.parametrize("decoded", [False, True])
def test_every_field_of_every_sample_comes_once_an_epoch(pairs, decoded):
    options = {"image_size": 24, "image_crop": "center"} if decoded else {"image_size": 0}
    loader = ringfeed.Loader(pairs, batch_size=8, seed=4, device="cpu", **options)
    for epoch in range(2):
        loader.set_epoch(epoch)
        seen = [g for batch in loader for g in check(batch, decoded)]
        assert sorted(seen) == list(range(70))


def test_a_restored_loader_continues_exactly(pairs):
    def open_one():
        return ringfeed.Loader(pairs, batch_size=8, seed=7, device="cpu", image_size=24)
    whole = [list(b["cls"].indices) for b in open_one()]
    first = open_one()
    it = iter(first)
    head = [list(next(it)["cls"].indices) for _ in range(3)]
    state = first.state_dict()
    second = open_one()
    second.load_state_dict(state)
    rest = [check(b, True) for b in second]
    assert head + rest == whole


def test_what_a_sample_cannot_be_is_refused_naming_it(tmp_path):
    w = ringfeed.DatasetWriter(str(tmp_path / "x.rfd"), fields=FIELDS)
    bad = sample(0)
    del bad["txt"]
    with pytest.raises(UsageError, match="sample 0: no field 'txt'"):
        w.write(bad)
    with pytest.raises(UsageError, match="no such field 'caption'"):
        w.write(dict(sample(0), caption=b"x"))
    with pytest.raises(UsageError, match=r"field 'emb' \(tensor:float32:4\) of shape \(3,\)"):
        w.write(dict(sample(0), emb=np.zeros(3, np.float32)))
    with pytest.raises(UsageError, match="field 'txt' .* is int64: convert it first"):
        w.write(dict(sample(0), txt=np.zeros(3, np.int64)))
    with pytest.raises(UsageError, match="label 700 does not fit"):
        w.write(dict(sample(0), cls=700))
    with pytest.raises(UsageError, match="carry their label as a field"):
        w.write(sample(0), 1)
    w.abort()
    with pytest.raises(UsageError, match="field 'a': named twice"):
        ringfeed.DatasetWriter(str(tmp_path / "y.rfd"), fields="a=bytes,a=bytes")
    with pytest.raises(UsageError, match="go together"):
        ringfeed.DatasetWriter(str(tmp_path / "y.rfd"), records="fields")
    with pytest.raises(UsageError, match="image_crop: this dataset's batches are no decoded"):
        ringfeed.Loader(_text_only(tmp_path), batch_size=1, device="cpu", image_crop="center")


def _text_only(tmp_path):
    path = str(tmp_path / "text.rfd")
    with ringfeed.DatasetWriter(path, fields={"txt": "text/plain"}) as w:
        w.write({"txt": "a caption"})
    return path


def _gpu_or_skip():
    torch = pytest.importorskip("torch")
    if not (ringfeed.cuda_available() and torch.cuda.is_available()):
        pytest.skip("needs a GPU and a CUDA build of ringfeed and torch")
    return torch


@pytest.mark.parametrize("decoder", ["cpu", "nvjpeg", "none"])
def test_on_a_gpu_every_field_is_in_gpu_memory_and_each_sample_its_own(pairs, decoder):
    """The CPU threads on a GPU, and image_size 0 (every field as stored): every field the CPU
    loader's, bit for bit. nvJPEG (another IDCT and upsampling than libjpeg-turbo's, its hardware
    or CUDA path chosen by the batch): the other fields the CPU loader's, and each sample's image
    nearer its own CPU decode than any other sample's (noise JPEGs: about 4 levels apart)."""
    torch = _gpu_or_skip()
    options = dict(batch_size=8, seed=4, image_size=24, image_crop="center", dtype="uint8")
    if decoder == "none":  # image_size 0: every field as stored, the image's bytes too
        options = dict(batch_size=8, seed=4, image_size=0)

    def take(loader):
        out = []
        for b in loader:
            out.append({k: tuple(torch.from_dlpack(t).cpu() for t in v)
                        if isinstance(v, tuple) else torch.from_dlpack(v).cpu()
                        for k, v in b.items()})
            out[-1]["_indices"] = list(b["cls"].indices)
        return out

    def by_index(batches):
        return {g: b["jpg"][k] for b in batches for k, g in enumerate(b["_indices"])}
    cpu = take(ringfeed.Loader(pairs, device="cpu", **options))
    if decoder != "none":
        options["image_decoder"] = decoder
    gpu_loader = ringfeed.Loader(pairs, device="cuda", **options)
    first = next(iter(gpu_loader))
    assert all((t[0] if isinstance(t, tuple) else t).__dlpack_device__()[0] == 2
               for t in first.values())
    gpu = take(ringfeed.Loader(pairs, device="cuda", **options))
    assert len(gpu) == len(cpu)
    for a, b in zip(cpu, gpu):
        assert list(a) == list(b) and a["_indices"] == b["_indices"]
        for k in FIELDS:
            if k == "jpg" and decoder == "nvjpeg":
                continue
            if isinstance(a[k], tuple):
                assert all(torch.equal(x, y) for x, y in zip(a[k], b[k])), k
            else:
                assert torch.equal(a[k], b[k]), k
    if decoder == "nvjpeg":
        want, got = by_index(cpu), by_index(gpu)
        assert sorted(want) == sorted(got) == list(range(70))
        for g in got:
            d = {h: (got[g].int() - want[h].int()).abs().float().mean().item() for h in want}
            assert min(d, key=d.get) == g and d[g] < 8, (g, d[g])


def test_ranks_share_an_epoch_and_a_mixture_needs_the_same_fields(pairs, tmp_path):
    seen = []
    for rank in range(2):
        loader = ringfeed.Loader(pairs, batch_size=8, seed=4, device="cpu", image_size=0,
                                 rank=rank, world_size=2)
        seen.append([g for b in loader for g in check(b, False)])
    assert not set(seen[0]) & set(seen[1])
    assert sorted(seen[0] + seen[1]) == list(range(70))
    mixed = ringfeed.Loader([pairs, pairs], batch_size=8, weights=[0.5, 0.5], device="cpu",
                            image_size=0)
    batch = next(iter(mixed))
    assert list(batch) == list(FIELDS)
    other = str(tmp_path / "other.rfd")
    with ringfeed.DatasetWriter(other, fields={"jpg": "image/jpeg", "cls": "label"},
                                classes=3) as w:
        w.write({"jpg": jpeg(0), "cls": 0})
    with pytest.raises(UsageError, match="fields jpg=image/jpeg,cls=label, not jpg=image/jpeg,"
                                         "txt=tokens:int32"):
        ringfeed.Loader([pairs, other], batch_size=8, weights=[0.5, 0.5], device="cpu")


def _png(rgb):
    from PIL import Image
    out = io.BytesIO()
    Image.new("RGB", (20, 16), rgb).save(out, format="PNG")
    return out.getvalue()


def test_image_field_names_the_one_of_several_decoded_and_the_others_come_as_stored(tmp_path):
    """Two image fields a sample, each of one colour: image_field decodes the one it names (its
    colour in every pixel, a lossless PNG resized), the other comes out as its stored bytes."""
    path = str(tmp_path / "two.rfd")
    fields = {"rgb": "image/png", "depth": "image/png", "cls": "label"}
    colours = {"rgb": lambda i: (3 * i, 0, 0), "depth": lambda i: (0, 0, 200 - i)}
    with ringfeed.DatasetWriter(path, fields=fields, chunk_size="16KiB") as w:
        w.write([{"rgb": _png(colours["rgb"](i)), "depth": _png(colours["depth"](i)),
                  "cls": i % 2} for i in range(30)])
    for decoded, stored in (("rgb", "depth"), ("depth", "rgb")):
        loader = ringfeed.Loader(path, batch_size=8, seed=3, device="cpu", image_size=8,
                                 image_crop="center", dtype="uint8", image_field=decoded)
        seen = []
        for b in loader:
            images = np.from_dlpack(b[decoded])
            values, offsets = (np.from_dlpack(t) for t in b[stored])
            for k, g in enumerate(b["cls"].indices):
                want = np.array(colours[decoded](g), np.uint8).reshape(3, 1, 1)
                assert images.shape[1:] == (3, 8, 8) and (images[k] == want).all(), (g, decoded)
                assert values[offsets[k]:offsets[k + 1]].tobytes() == _png(colours[stored](g))
                seen.append(g)
        assert sorted(seen) == list(range(30))
    with pytest.raises(UsageError, match=r"several image fields \(rgb, depth\); image_field"):
        ringfeed.Loader(path, batch_size=8, device="cpu")
    with pytest.raises(UsageError, match="'cls' is no image field; their image fields: rgb, "
                                         "depth"):
        ringfeed.Loader(path, batch_size=8, device="cpu", image_field="cls")
    with pytest.raises(UsageError, match=r"'jpg' is no field of these samples \(rgb, depth, "
                                         r"cls\)"):
        ringfeed.Loader(path, batch_size=8, device="cpu", image_field="jpg")
    with pytest.raises(UsageError, match="image_field: image_size 0 hands out"):
        ringfeed.Loader(path, batch_size=8, device="cpu", image_size=0, image_field="rgb")
    with pytest.raises(UsageError, match="image_field: 'txt' is no image field; they have none"):
        ringfeed.Loader(_text_only(tmp_path), batch_size=1, device="cpu", image_field="txt")

"""Decoded images in a mixture and in state dicts: ringfeed.Loader([a, b], B, weights=[...],
image_size=S) over ImageFolder trees converted by ringfeed-convert images (JPEGs made here with
PIL).

A mixture decodes each sample as its own dataset's loader does (centre crops: every record's
pixels equal; random crops: the first dataset's first epoch equal, its crops keyed as a loader of
it alone keys them); a mixture stopped mid-epoch and resumed from its state (through JSON), or
restored to an earlier state after decoding ahead, hands out the batches of one never stopped,
bit for bit; datasets of other class lists, or an image dataset with a dataset of tensors, are
refused naming both. A state records image_size, image_crop, layout, normalize, mean and std: a
loader of other values refuses it naming each with both values, one of other skip_bad_records,
max_image_side, image_threads or image_decoder takes it, and a state saved before they were
recorded still loads.
"""

import json
import os
import subprocess

import numpy as np
import pytest

import ringfeed
from ringfeed import UsageError

SEED = 5
BATCH = 8


def make_tree(root, classes, per_class, shift):
    """An ImageFolder tree: per_class JPEGs in each class folder, of sizes 40 to 119 a side, each
    a gradient of its own (`shift` makes another tree's images other images)."""
    from PIL import Image
    for c, name in enumerate(classes):
        os.makedirs(root / name, exist_ok=True)
        for k in range(per_class):
            i = shift + c * per_class + k
            h, w = 40 + (i * 37) % 80, 40 + (i * 53 + 11) % 80
            y, x = np.mgrid[0:h, 0:w]
            rgb = np.stack([20 + 215 * x / w, 20 + 215 * y / h,
                            128 + 90 * np.sin(0.05 * x + 0.03 * y + i)], axis=-1)
            Image.fromarray(rgb.astype(np.uint8)).save(root / name / f"{k:03d}.jpg", quality=90)
    return root


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    """Datasets of ImageFolder trees: a (3 classes x 8), b (the same classes x 6, other images),
    owls (another third class), more (a fourth class)."""
    pytest.importorskip("PIL")
    tool = os.environ.get("RINGFEED_CONVERT")
    if not tool:
        pytest.skip("RINGFEED_CONVERT is not set (ctest sets it to the built ringfeed-convert)")
    root = tmp_path_factory.mktemp("trees")
    out = {}
    for name, classes, per_class, shift in [("a", ["cat", "dog", "fox"], 8, 0),
                                            ("b", ["cat", "dog", "fox"], 6, 100),
                                            ("owls", ["cat", "dog", "owl"], 4, 200),
                                            ("more", ["cat", "dog", "fox", "yak"], 4, 300)]:
        tree = make_tree(root / name, classes, per_class, shift)
        path = root / f"{name}.rfd"
        # --keep-order: sample g of a tree is image g of its walk (the labels checked below).
        subprocess.run([tool, "images", str(tree), "-o", str(path), "--chunk-size", "16KiB",
                        "--keep-order", "-q"], check=True, capture_output=True)
        out[name] = str(path)
    return out


def loader(data, **options):
    options = {"device": "cpu", "dtype": "uint8", "layout": "NHWC", "image_size": 32,
               "seed": SEED, "image_threads": 2, **options}
    return ringfeed.Loader(data, BATCH, **options)


def mixture(trees, **options):
    return loader([trees["a"], trees["b"]], weights=[0.7, 0.3], **options)


def batches(l, n):
    """The next n batches (on into the next epochs), each (epoch, indices, labels, pixels)."""
    out = []
    while len(out) < n:
        epoch = l.epoch
        for samples, labels in l:
            out.append((epoch, list(samples.indices), np.from_dlpack(labels).tolist(),
                        np.from_dlpack(samples).tobytes()))
            if len(out) == n:
                break
    return out


def pixels_by_index(taken):
    return {g: np.frombuffer(p, np.uint8).reshape(-1, 32, 32, 3)[i]
            for _, idx, _, p in taken for i, g in enumerate(idx)}


def test_a_mixture_decodes_each_sample_as_its_own_datasets_loader_does(trees):
    # Centre crops: every record of either dataset equals its own loader's (b's indices count
    # after a's 24 samples in the mixture).
    alone = pixels_by_index(batches(loader(trees["a"], image_crop="center"), 3))
    alone.update({24 + g: x for g, x in
                  pixels_by_index(batches(loader(trees["b"], image_crop="center"), 3)).items()})
    assert len(alone) == 42
    mixed = batches(mixture(trees, image_crop="center"), 12)  # two mixture epochs of 42
    seen = 0
    for _, idx, labels, pixels in mixed:
        x = np.frombuffer(pixels, np.uint8).reshape(-1, 32, 32, 3)
        for i, g in enumerate(idx):
            assert np.array_equal(x[i], alone[g]), g
            assert labels[i] == (g if g < 24 else g - 24) // (8 if g < 24 else 6)  # its class
            seen += 1
    assert seen == 84
    # Random crops: a's first epoch in the mixture (its first 24 samples drawn) is cropped as a
    # loader of a alone crops epoch 0.
    a0 = pixels_by_index(batches(loader(trees["a"]), 3))
    drawn_from_a = 0
    for _, idx, _, pixels in batches(mixture(trees), 12):
        x = np.frombuffer(pixels, np.uint8).reshape(-1, 32, 32, 3)
        for i, g in enumerate(idx):
            if g < 24 and drawn_from_a < 24:
                assert np.array_equal(x[i], a0[g]), g
                drawn_from_a += 1
    assert drawn_from_a == 24


def test_a_resumed_mixture_gives_the_batches_of_one_never_stopped(trees):
    straight = batches(mixture(trees), 14)  # into the third mixture epoch (6 batches an epoch)
    for stop in (2, 5, 8):
        stopped = mixture(trees)
        first = batches(stopped, stop)  # the stage has decoded ahead of these
        assert first == straight[:stop]
        state = json.loads(json.dumps(stopped.state_dict()))
        resumed = mixture(trees)
        resumed.load_state_dict(state)
        assert batches(resumed, 14 - stop) == straight[stop:], stop
    # A loader restored to an earlier state of its own, after it had decoded ahead.
    again = mixture(trees)
    batches(again, 2)
    early = again.state_dict()
    batches(again, 3)
    again.load_state_dict(early)
    assert batches(again, 4) == straight[2:6]


def test_datasets_of_other_class_lists_or_kinds_are_refused_naming_both(trees, datasets):
    with pytest.raises(UsageError) as e:
        loader([trees["a"], trees["owls"]], weights=[1, 1])
    text = str(e.value)
    assert (f'{trees["owls"]}: holds other classes than {trees["a"]}: its class 2 is "owl", '
            f'not "fox" (a label names one class in every dataset of a mixture') in text
    with pytest.raises(UsageError, match=r"it has 4 class names, not 3 \(the first 3 the same\)"):
        loader([trees["a"], trees["more"]], weights=[1, 1])
    tensors = datasets.positional()
    with pytest.raises(UsageError) as e:
        loader([trees["a"], tensors], weights=[1, 1])
    text = str(e.value)
    assert f"cannot be mixed with {trees['a']}: it holds uint8 samples of shape" in text
    assert "image/jpeg bytes records" in text
    assert "a mixture of image datasets (decoded into images) takes image datasets only" in text


def test_a_state_of_other_image_settings_is_refused_naming_each(trees):
    saved = loader(trees["a"], image_size=32)
    batches(saved, 1)
    state = json.loads(json.dumps(saved.state_dict()))
    assert (state["image_size"], state["image_crop"], state["layout"]) == (32, "random", "NHWC")
    for options, named in [
            ({"image_size": 24}, ["image_size: the state has 32, this loader 24"]),
            ({"image_size": 24, "image_crop": "center"},
             ["image_size: the state has 32, this loader 24",
              "image_crop: the state has 'random', this loader 'center'"]),
            ({"layout": "NCHW"}, ["layout: the state has 'NHWC', this loader 'NCHW'"]),
            ({"dtype": "float32", "normalize": False},
             ["dtype: the state has 'uint8', this loader 'float32'"]),
            ({"image_size": 0, "layout": None, "dtype": None, "image_threads": None},
             ["image_size: the state has 32, this loader 0"])]:
        other = loader(trees["a"], **options)
        with pytest.raises(UsageError) as e:
            other.load_state_dict(state)
        for text in named:
            assert text in str(e.value), (options, str(e.value))
    # Normalized output: the statistics are recorded and checked too.
    floats = loader(trees["a"], dtype="float32", mean=[1, 2, 3], std=[4, 5, 6])
    with pytest.raises(UsageError, match=r"mean: the state has \[1\.0, 2\.0, 3\.0\], this "
                                         r"loader \[\]; std: the state has"):
        loader(trees["a"], dtype="float32").load_state_dict(floats.state_dict())
    # What changes no sample's crop is not recorded, and may change at a resume.
    rest = batches(loader(trees["a"], image_size=32), 3)[1:]
    for options in ({"skip_bad_records": True}, {"max_image_side": 4000}, {"image_threads": 1},
                    {"image_decoder": "cpu"}):
        other = loader(trees["a"], **options)
        other.load_state_dict(state)
        assert batches(other, 2) == rest, options
    # A mixture's state records and checks them too.
    mixed = mixture(trees)
    batches(mixed, 2)
    with pytest.raises(UsageError, match="image_size: the state has 32, this loader 24"):
        mixture(trees, image_size=24).load_state_dict(mixed.state_dict())


def test_a_state_saved_before_the_image_settings_were_recorded_still_loads(trees):
    look = ("layout", "normalize", "mean", "std", "image_size", "image_crop", "image_alpha")
    saved = loader(trees["a"])
    batches(saved, 1)
    state = saved.state_dict()
    old = {k: v for k, v in state.items() if k not in look}
    old["version"] = 3
    other = loader(trees["a"], image_size=24)  # unknown: not checked
    other.load_state_dict(old)
    assert (other.epoch, other.position) == (0, BATCH)
    same = loader(trees["a"])
    same.load_state_dict(old)
    assert same.state_dict() == state
    with pytest.raises(UsageError, match="the state lacks"):  # version 4 without them
        loader(trees["a"]).load_state_dict({**old, "version": 4})
    mixed = mixture(trees)
    batches(mixed, 2)
    state = mixed.state_dict()
    assert state["version"] == 4
    old = {k: v for k, v in state.items() if k not in look}
    old["version"] = 1
    resumed = mixture(trees)
    resumed.load_state_dict(old)
    assert resumed.state_dict() == state

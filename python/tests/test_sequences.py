"""Packed token sequences (ringfeed.Loader(..., sequence_length=L)): every token of an epoch
once, in the stream's order, over ranks and through resumes at other world sizes; the document
boundaries; weighted mixtures' shares; and what is refused."""

import itertools
import math

import numpy as np
import pytest

import ringfeed

L = 31
BATCH = 4


def documents(n, low, high, seed):
    """n documents of 1 to 200 ids from [low, high), every one distinct in content."""
    rng = np.random.default_rng(seed)
    return [rng.integers(low, high, size=int(rng.integers(1, 200))).astype(np.uint16)
            for _ in range(n)]


def write(path, docs, **kw):
    with ringfeed.DatasetWriter(str(path), records="tokens", dtype="uint16", labels=False,
                                chunk_size="16KiB", **kw) as w:
        w.write_records(np.concatenate(docs),
                        np.concatenate([[0], np.cumsum([len(d) for d in docs])]))
    return str(path)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("seq")
    docs = documents(800, 1, 1000, 0)
    return write(d / "c.rfd", docs), docs


def loader(path, world=1, rank=0, **kw):
    kw.setdefault("shuffle_window", 3)
    return ringfeed.Loader(path, BATCH, sequence_length=L, rank=rank, world_size=world,
                           device="cpu", **kw)


def rows_of(ld, steps=None):
    """The valid tokens of each row the loader hands out (the rest of its epoch, or `steps`
    batches), checking each batch's shapes."""
    out = []
    for b in (ld if steps is None else itertools.islice(ld, steps)):
        assert isinstance(b, ringfeed.Sequences)
        t, n = b.tokens.numpy(), b.lengths.numpy()
        assert t.shape[1] == L + 1 and t.dtype == np.int64 and n.shape == (t.shape[0],)
        for row, k in zip(t, n):
            out.append(row[:k].copy())
    return out


def stream(docs, eod):
    parts = []
    for d in docs:
        parts.append(d.astype(np.int64))
        if eod is not None:
            parts.append(np.array([eod], np.int64))
    return np.concatenate(parts)


@pytest.mark.parametrize("eod", [None, 0])
def test_one_rank_hands_out_the_documents_packed_in_order(corpus, eod):
    path, docs = corpus
    rows = rows_of(loader(path, shuffle="none", eod_token=eod))
    want = stream(docs, eod)
    # Full rows of L + 1 but the last, and their concatenation is the stream itself.
    assert all(len(r) == L + 1 for r in rows[:-1]) and 0 < len(rows[-1]) <= L + 1
    assert np.array_equal(np.concatenate(rows), want)


def test_drop_last_drops_only_the_partial_sequence(corpus):
    path, docs = corpus
    want = stream(docs, 0)
    rows = rows_of(loader(path, shuffle="none", eod_token=0, drop_last=True))
    assert len(rows) == len(want) // (L + 1)
    assert np.array_equal(np.concatenate(rows), want[:len(rows) * (L + 1)])


def test_boundaries_restart_at_each_document(corpus):
    path, docs = corpus
    ld = loader(path, shuffle="none", eod_token=0)
    starts = set(np.cumsum([0] + [len(d) + 1 for d in docs])[:-1].tolist())
    at = 0
    for b in ld:
        t, n = b.tokens.numpy(), b.lengths.numpy()
        cu, pos = b.cu_seqlens.numpy(), b.position_ids.numpy()
        assert cu.dtype == np.int32 and pos.shape == (t.shape[0], L)
        assert cu[0] == 0 and cu[-1] == t.shape[0] * L and np.all(np.diff(cu) > 0)
        want_cu = []
        for r in range(t.shape[0]):
            inputs = min(int(n[r]), L)
            seg = [0] + [p for p in range(1, inputs) if at + p in starts]
            if inputs < L and inputs > seg[-1]:
                seg.append(inputs)
            want_cu += [r * L + p for p in seg]
            want_pos = np.zeros(L, np.int64)
            for a, e in zip(seg, seg[1:] + [L]):
                want_pos[a:e] = np.arange(e - a)
            assert np.array_equal(pos[r], want_pos)
            at += int(n[r])
        assert np.array_equal(cu, np.array(want_cu + [t.shape[0] * L], np.int32))


@pytest.mark.parametrize("shuffle", ["window", "none"])
def test_ranks_share_an_epoch_each_token_once_and_step_together(corpus, shuffle):
    path, docs = corpus
    one = np.concatenate(rows_of(loader(path, shuffle=shuffle, eod_token=0)))
    lens = []
    got = []
    for r in range(3):
        ld = loader(path, world=3, rank=r, shuffle=shuffle, eod_token=0)
        rows = rows_of(ld)
        lens.append(len(rows))
        got += rows
    assert len(set(lens)) == 1  # every rank the same rows: one empty row where one has fewer
    assert np.array_equal(np.sort(np.concatenate(got)), np.sort(one))


def run(path, world, state=None, steps=None, **kw):
    """Every rank of `world` from `state` for `steps` batches (None: the epoch's end): their
    rows, and rank 0's state dict."""
    rows, states = [], []
    for r in range(world):
        ld = loader(path, world=world, rank=r, **kw)
        if state is not None:
            ld.load_state_dict(state)
        rows += rows_of(ld, steps)
        states.append(ld.state_dict())
    # Ranks at one place hold one state but for their rank.
    assert all({**s, "rank": 0} == {**states[0], "rank": 0} for s in states)
    return rows, states[0]


@pytest.mark.parametrize("drop_last", [False, True])
def test_resumes_2_3_2_hand_out_every_token_of_the_epoch_once(corpus, drop_last):
    path, docs = corpus
    kw = dict(eod_token=0, drop_last=drop_last, seed=7)
    whole = np.concatenate(rows_of(loader(path, **kw)))
    a, s1 = run(path, 2, steps=5, **kw)
    b, s2 = run(path, 3, state=s1, steps=3, **kw)
    c, s3 = run(path, 2, state=s2, **kw)
    got = np.concatenate(a + b + c)
    assert np.array_equal(np.sort(got), np.sort(whole))
    # The state stays small: one range per rank of each run at most.
    assert len(s2["sources"][0]["list"]) <= 2
    # The epoch after the resumed one is the ordinary epoch 1 at two ranks.
    assert s3["sources"][0] == {"epoch": 1, "position": 0, "world_size": 2, "list": []}
    nxt, _ = run(path, 2, state=s3, steps=2, **kw)
    fresh = []
    for r in range(2):
        ld = loader(path, world=2, rank=r, **kw)
        rows_of(ld)  # epoch 0
        fresh += rows_of(ld, 2)
    assert all(np.array_equal(x, y) for x, y in zip(nxt, fresh)) and len(nxt) == len(fresh)


def test_a_resume_at_the_same_world_size_continues_exactly(corpus):
    path, _ = corpus
    ld = loader(path, world=2, rank=1, eod_token=0)
    first = rows_of(ld, 3)
    state = ld.state_dict()
    rest = rows_of(ld)
    again = loader(path, world=2, rank=1, eod_token=0)
    again.load_state_dict(state)
    assert all(np.array_equal(x, y) for x, y in zip(rows_of(again), rest))
    assert first


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    d = tmp_path_factory.mktemp("mix")
    # Disjoint ids: each row tells its source.
    return (write(d / "a.rfd", documents(400, 1, 500, 1)),
            write(d / "b.rfd", documents(100, 500, 1000, 2)))


@pytest.mark.parametrize("weights", [[0.7, 0.3], [0.999, 0.001], [1, 0]])
def test_a_mixture_draws_rows_by_weight_within_one_row_at_every_prefix(two, weights):
    ld = ringfeed.Loader(list(two), BATCH, sequence_length=L, weights=weights, device="cpu",
                         eod_token=0)
    sources = []
    for b in itertools.islice(ld, 300):
        t, n = b.tokens.numpy(), b.lengths.numpy()
        for row, k in zip(t, n):
            ids = row[:k][row[:k] > 0]
            assert ids.size and (np.all(ids < 500) or np.all(ids >= 500))
            sources.append(int(ids[0] >= 500))
    w = np.array(weights, float) / sum(weights)
    drawn_b = np.cumsum(sources)
    k = np.arange(1, len(sources) + 1)
    # The rule's bound for two sources: |drawn - w k| < 1 at every prefix.
    assert np.max(np.abs(drawn_b - w[1] * k)) < 1
    # The schedule is a pure function of (weights, seed, k): another loader draws the same.
    again = ringfeed.Loader(list(two), BATCH, sequence_length=L, weights=weights, device="cpu",
                            eod_token=0)
    s2 = []
    for b in itertools.islice(again, 300):
        for row, k_ in zip(b.tokens.numpy(), b.lengths.numpy()):
            ids = row[:k_][row[:k_] > 0]
            s2.append(int(ids[0] >= 500))
    assert s2 == sources


def test_a_mixture_resumes_exactly_and_each_source_keeps_its_epoch(two):
    kw = dict(sequence_length=L, weights=[0.5, 0.5], device="cpu", eod_token=0)
    ld = ringfeed.Loader(list(two), BATCH, **kw)
    b = ringfeed.Loader(two[1], BATCH, sequence_length=L, device="cpu", eod_token=0)
    epoch_b = len(b)  # batches of b's epoch alone
    list(itertools.islice(ld, epoch_b * 3))  # b, at half the rows, is past its first epoch
    state = ld.state_dict()
    assert state["sources"][1]["epoch"] >= 1 and state["sources"][0]["epoch"] == 0
    rest = [x.tokens.numpy().copy() for x in itertools.islice(ld, 20)]
    again = ringfeed.Loader(list(two), BATCH, **kw)
    again.load_state_dict(state)
    assert all(np.array_equal(x, y.tokens.numpy())
               for x, y in zip(rest, itertools.islice(again, 20)))
    with pytest.raises(TypeError, match="no epoch"):
        len(ld)


def test_bad_weights_and_states_are_refused(two, corpus):
    path, _ = corpus
    for weights, what in [([0.5, -0.5], "finite numbers >= 0"), ([math.nan, 1], "finite numbers"),
                          ([0, 0], "at least one"), ([1], "one weight a dataset")]:
        with pytest.raises(ringfeed.UsageError, match=what):
            ringfeed.Loader(list(two), BATCH, sequence_length=L, weights=weights, device="cpu")
    state = loader(two[0]).state_dict()
    with pytest.raises(ringfeed.UsageError, match="datasets: the state has"):
        loader(path).load_state_dict(state)
    other = loader(path, seed=5).state_dict()
    with pytest.raises(ringfeed.UsageError, match="seed: the state has 5"):
        loader(path).load_state_dict(other)
    with pytest.raises(ringfeed.UsageError, match="not a packed sequences state"):
        loader(path).load_state_dict({"version": 3, "epoch": 0})


@pytest.mark.parametrize("weights, bad", [([1e308, 1e308], "1e+308 is past the largest float"),
                                          ([1e300, 1e-300], "1e+300 is past the largest float"),
                                          ([1, 1e-300], "1e-300 is below the smallest float")])
def test_weights_no_float_holds_are_refused_saying_so(two, weights, bad):
    """Issue 40: these were refused as "must be a list of finite numbers >= 0", which they are
    (and 1e-300 would have been a weight of 0)."""
    for kw in (dict(sequence_length=L), {}):
        with pytest.raises(ringfeed.UsageError) as e:
            ringfeed.Loader(list(two), BATCH, weights=weights, device="cpu", **kw)
        assert str(e.value).startswith("weights must be a list of finite numbers >= 0, got ")
        assert bad in str(e.value) and "which the option is held in" in str(e.value)
    ringfeed.Loader(list(two), BATCH, sequence_length=L, weights=[3e38, 1e-30], device="cpu")


@pytest.mark.parametrize("field, value", [("eod_token", 2**40 + 7), ("eod_token", 2**31),
                                          ("pad_token", 2**32 + 3), ("pad_token", -2**31 - 1)])
def test_a_token_the_int32_output_cannot_hold_is_refused(corpus, field, value):
    """Issue 40, W2: with dtype='int32', eod_token=2**40+7 came out as 7, a real token id."""
    path, _ = corpus
    with pytest.raises(ringfeed.UsageError) as e:
        loader(path, dtype="int32", **{field: value})
    assert str(e.value) == (f"{field} {value} does not fit the output dtype int32 (-2147483648 "
                            f"to 2147483647); use dtype int64")
    fits = loader(path, dtype="int32", eod_token=2**31 - 1, pad_token=-2**31)
    t = next(iter(fits)).tokens.numpy()
    assert t.dtype == np.int32 and 2**31 - 1 in t


def test_what_cannot_be_packed_is_refused(tmp_path, corpus):
    path, docs = corpus
    v2 = write(tmp_path / "v2.rfd", docs[:50], format_version=2)
    with pytest.raises(ringfeed.UsageError, match="recompress"):
        loader(v2)
    with pytest.raises(ringfeed.UsageError, match="give sequence_length too"):
        ringfeed.Loader(path, BATCH, eod_token=0, device="cpu")
    with pytest.raises(ringfeed.UsageError, match="int64 or int32"):
        loader(path, dtype="float32")


def test_a_directory_part_without_token_counts_is_named_with_its_own_version(tmp_path, corpus):
    """Issue 40: a part of format version 2 was said to be of version 3, the directory's newest."""
    _, docs = corpus
    write(tmp_path / "part-00000.rfd", docs[:50])
    old = write(tmp_path / "part-00001.rfd", docs[50:100], format_version=2)
    assert ringfeed.dataset_info(tmp_path).format_version == 3
    with pytest.raises(ringfeed.UsageError) as e:
        loader(str(tmp_path))
    assert str(e.value).startswith(f"sequence_length: {old}: chunk 0: the chunk index does not "
                                   f"say how many tokens the chunk holds (format version 2); "
                                   f"rewrite the part with `ringfeed-convert recompress`")


def test_a_loader_on_the_second_gpu_packs_there(corpus):
    """The packing worker's CUDA calls go to the loader's GPU, not the process's first (GPU 1's
    pool events recorded from a thread on GPU 0 failed, and DDP's other rank waited forever)."""
    torch = pytest.importorskip("torch")
    if not ringfeed.cuda_available() or torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    path, docs = corpus
    want = [r for r in rows_of(loader(path, shuffle="none", eod_token=0))]
    ld = ringfeed.Loader(path, BATCH, sequence_length=L, shuffle="none", eod_token=0,
                         device="cuda:1", shuffle_window=3)
    assert ld.device == "cuda:1"
    got = []
    for b in ld:
        t = torch.from_dlpack(b.tokens)
        assert t.device.index == 1
        for row, k in zip(t.cpu().numpy(), torch.from_dlpack(b.lengths).cpu().numpy()):
            got.append(row[:k])
    assert len(got) == len(want) and all(np.array_equal(x, y) for x, y in zip(got, want))


@pytest.mark.parametrize("eod", [None, 0])
def test_pad_gives_each_document_a_row_of_its_own_cut_at_the_row(corpus, eod):
    path, docs = corpus
    rows = rows_of(loader(path, shuffle="none", eod_token=eod, packing="pad", pad_token=-1))
    assert len(rows) == len(docs)
    for row, d in zip(rows, docs):
        want = stream([d], eod)[:L + 1]
        assert np.array_equal(row, want)


def test_pad_resumes_2_3_2_each_document_once(corpus):
    path, docs = corpus
    kw = dict(eod_token=0, packing="pad", seed=3)
    a, s1 = run(path, 2, steps=7, **kw)
    b, s2 = run(path, 3, state=s1, steps=5, **kw)
    c, _ = run(path, 2, state=s2, **kw)
    got = sorted(tuple(r.tolist()) for r in a + b + c if len(r))
    want = sorted(tuple(stream([d], 0)[:L + 1].tolist()) for d in docs)
    assert got == want

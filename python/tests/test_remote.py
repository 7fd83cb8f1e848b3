"""Remote datasets through ringfeed.Loader and ringfeed.dataset_info (issue 42): a dataset served
by a real nginx that the test starts on loopback (HTTP, and HTTPS with a certificate the test
makes) reads as the same dataset read from the local disk: the same batches in the same order,
the same state dict; what the server refuses is named without the URL's credentials."""

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import itertools

import numpy as np
import pytest

import ringfeed
from conftest import epoch_indices, open_loader

NGINX = "/usr/sbin/nginx"
OPENSSL = "/usr/bin/openssl"

pytestmark = pytest.mark.skipif(not os.access(NGINX, os.X_OK),
                                reason="nginx is not installed (apt-get install nginx)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx serving `root` on 127.0.0.1 (a free port), one process in the foreground, stopped
    by stop() (and killed with the test process: it never outlives the session)."""

    def __init__(self, root: Path, work: Path, cert: str = "", key: str = "",
                 directives: str = "") -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.work = work
        for attempt in range(5):
            self.port = free_port()
            tls = f" ssl;\n ssl_certificate {cert};\n ssl_certificate_key {key}" if cert else ""
            temps = "".join(f" {t}_temp_path {work}/{t};\n"
                            for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
            conf = work / "nginx.conf"
            conf.write_text(
                f"daemon off;\nmaster_process off;\npid {work}/nginx.pid;\n"
                f"error_log {work}/error.log info;\nevents {{}}\nhttp {{\n"
                f" access_log {work}/access.log;\n{temps}"
                f" server {{\n listen 127.0.0.1:{self.port}{tls};\n root {root};\n"
                f" {directives}\n }}\n}}\n")
            self.proc = subprocess.Popen([NGINX, "-p", str(work), "-e", f"{work}/error.log",
                                          "-c", str(conf)], preexec_fn=_die_with_parent)
            self.scheme = "https" if cert else "http"
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                    return
                except OSError:
                    time.sleep(0.02)
            self.stop()
        raise RuntimeError("nginx did not start: " + (work / "error.log").read_text())

    def url(self, path: str) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"

    def requests(self, prefix: str) -> int:
        """The requests logged for paths starting with `prefix`, once the log has settled (nginx
        logs a request a moment after answering it)."""
        log = self.work / "access.log"
        count = -1
        while True:
            time.sleep(0.3)
            lines = log.read_text().splitlines() if log.exists() else []
            now = sum(1 for line in lines if f"GET {prefix}" in line or f"HEAD {prefix}" in line)
            if now == count:
                return now
            count = now

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)


def _die_with_parent() -> None:
    import ctypes
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@pytest.fixture(scope="module")
def served(datasets, tmp_path_factory):
    """(local root, nginx) serving a sharded and a compressed dataset and a single file."""
    root = tmp_path_factory.mktemp("served")
    for path in (datasets.positional(shards=3), datasets.positional(compress="zstd:3"),
                 datasets.positional(n=500)):
        base = Path(path)
        for f in base.parent.glob(base.stem + "*.rfd"):
            shutil.copy(f, root / f.name)
    server = Nginx(root, tmp_path_factory.mktemp("nginx"),
                   directives="location /private/ { return 403; }")
    yield root, server
    server.stop()


def shard_url(server, root: Path, stem: str, shard: int = 0) -> str:
    names = sorted(p.name for p in root.glob(stem + "*.rfd"))
    return server.url("/" + names[shard])


def test_a_remote_dataset_loads_the_batches_of_the_local_one(served, datasets):
    root, server = served
    local = datasets.positional(shards=3)
    url = shard_url(server, root, Path(local).stem, 1)
    for seed in (5, 11):
        want = epoch_indices(open_loader(local, seed=seed))
        got = epoch_indices(open_loader(url, seed=seed, remote_in_flight=4))
        assert got == want
        assert sorted(got) == list(range(1000))


def test_compressed_chunks_and_a_state_dict_resume_as_locally(served, datasets):
    root, server = served
    local = datasets.positional(compress="zstd:3")
    url = shard_url(server, root, Path(local).stem)
    remote = open_loader(url)
    it = iter(remote)
    for _ in range(5):
        next(it)
    state = remote.state_dict()
    rest = [int(i) for batch, _ in it for i in batch.indices]
    resumed = open_loader(url)
    resumed.load_state_dict(state)
    assert [int(i) for batch, _ in resumed for i in batch.indices] == rest
    # The local dataset is the same one: it takes the remote loader's state too.
    local_loader = open_loader(local)
    local_loader.load_state_dict(state)
    assert [int(i) for batch, _ in local_loader for i in batch.indices] == rest


def test_a_cache_fetches_each_chunk_once_over_epochs_and_runs(served, datasets, tmp_path):
    """Epochs 2 and 3, and a second loader on the same cache, fetch no chunk: the same batches
    as the local dataset's, from the cache's files."""
    root, server = served
    local = datasets.positional(shards=3)
    stem = "/" + Path(local).stem
    url = shard_url(server, root, Path(local).stem, 2)
    cache = tmp_path / "cache"
    options = dict(seed=7, cache_dir=str(cache), cache_size="64MiB")
    want = open_loader(local, seed=7)
    before = server.requests(stem)
    loader = open_loader(url, **options)
    for epoch in range(3):
        loader.set_epoch(epoch)
        want.set_epoch(epoch)
        assert epoch_indices(loader) == epoch_indices(want)
        if epoch == 0:
            first = server.requests(stem)
    assert server.requests(stem) == first
    chunks = list(cache.glob("dataset-*/chunk-*"))
    assert len(chunks) == ringfeed._ringfeed._Dataset(local).chunks
    opened = first
    again = open_loader(url, **options)
    opens = server.requests(stem) - opened
    assert epoch_indices(again) == epoch_indices(open_loader(local, seed=7))
    assert server.requests(stem) - opened == opens  # its opening only: no chunk fetched
    assert first - before > opens  # the first epoch did fetch


def machines_fetches(server, url, stem, budget, tmp_path, partition, epochs=3):
    """Two machines of one rank each (world_size 2), each with its own cache of `budget` bytes:
    the requests each epoch made (after the opens), and each epoch's samples over both."""
    extra = dict(partition="node", node_ranks=1) if partition == "node" else {}
    tmp_path.mkdir()
    loaders = [open_loader(url, rank=r, world_size=2, cache_dir=str(tmp_path / f"m{r}"),
                           cache_size=str(budget), **extra) for r in range(2)]
    fetched, seen = [], []
    for epoch in range(epochs):
        before = server.requests(stem)
        samples = []
        for loader in loaders:
            loader.set_epoch(epoch)
            samples += epoch_indices(loader)
        fetched.append(server.requests(stem) - before)
        seen.append(sorted(samples))
    return fetched, seen


def test_the_node_partition_keeps_each_machines_part_in_its_cache(served, datasets, tmp_path):
    """partition="node": each machine's ranks read the same part every epoch, so a cache that
    holds the part fetches nothing after the first epoch; the global partition deals each epoch
    anew, and the same caches keep fetching. Both visit every sample once an epoch."""
    root, server = served
    local = datasets.positional(n=2000, shards=2)
    base = Path(local)
    for f in base.parent.glob(base.stem + "*.rfd"):  # served beside the module's datasets
        shutil.copy(f, root / f.name)
    stem = "/" + base.stem
    url = shard_url(server, root, base.stem)
    budget = int(0.6 * ringfeed._ringfeed._Dataset(local).total_bytes)
    node, node_seen = machines_fetches(server, url, stem, budget, tmp_path / "node", "node")
    glob, glob_seen = machines_fetches(server, url, stem, budget, tmp_path / "global", "global")
    assert node[0] > 0 and node[1:] == [0, 0], node
    assert min(glob[1:]) > 0, glob
    for seen in node_seen + glob_seen:
        assert seen == list(range(2000))


def packed_tokens(loader):
    """Every valid token of the rest of a packed loader's epoch, in order."""
    out = []
    for b in loader:
        for row, k in zip(b.tokens.numpy(), b.lengths.numpy()):
            out.extend(row[:k].tolist())
    return out


def test_packed_sequences_under_the_node_partition_keep_each_machines_part(served, tmp_path):
    """sequence_length with partition="node": each machine packs the same part of the corpus
    every epoch, so its cache fetches nothing after the first; every token of an epoch comes once
    over the machines; a state resumes at another world size of the same machines and is refused,
    naming them, at other machines."""
    root, server = served
    rng = np.random.default_rng(4)
    docs = [rng.integers(1, 60000, size=int(rng.integers(1, 300))).astype(np.uint16)
            for _ in range(900)]
    with ringfeed.DatasetWriter(str(root / "packed.rfd"), records="tokens", dtype="uint16",
                                labels=False, chunk_size="8KiB") as w:
        w.write_records(np.concatenate(docs),
                        np.concatenate([[0], np.cumsum([len(d) for d in docs])]))
    want = sorted(np.concatenate(docs).tolist() + [0] * len(docs))
    url = server.url("/packed.rfd")
    budget = int(0.7 * ringfeed.dataset_info(str(root / "packed.rfd")).stored_bytes)

    def open_packed(rank, world, node_ranks, **kw):
        return ringfeed.Loader(url, 4, sequence_length=31, eod_token=0, rank=rank,
                               world_size=world, partition="node", node_ranks=node_ranks,
                               device="cpu", shuffle_window=3, seed=3, **kw)

    before = server.requests("/packed.rfd")  # the loaders read ahead from their opening on
    machines = [open_packed(r, 2, 1, cache_dir=str(tmp_path / f"m{r}"), cache_size=str(budget))
                for r in range(2)]
    fetched, parts = [], []
    for epoch in range(3):
        got, mine = [], []
        for m in machines:
            m.set_epoch(epoch)
            tokens = packed_tokens(m)
            mine.append(sorted(tokens))
            got += tokens
        fetched.append(server.requests("/packed.rfd") - before)
        before = server.requests("/packed.rfd")
        parts.append(mine)
        assert sorted(got) == want, f"epoch {epoch}"
    assert fetched[0] > 0 and fetched[1:] == [0, 0], fetched
    assert parts[0] == parts[1] == parts[2]  # each machine's part, every epoch
    state = machines[0].state_dict()
    assert state["node_ranks"] == 1 and state["version"] == 2
    # Mid-epoch at 2 machines of 1 rank: resumed by 2 machines of 2 ranks, exactly the rest.
    first = [open_packed(r, 2, 1) for r in range(2)]
    taken = []
    for ld in first:
        ld.set_epoch(3)
        for b in itertools.islice(ld, 5):
            for row, k in zip(b.tokens.numpy(), b.lengths.numpy()):
                taken.extend(row[:k].tolist())
    mid = first[0].state_dict()
    for r in range(4):
        ld = open_packed(r, 4, 2)
        ld.load_state_dict(mid)
        taken += packed_tokens(ld)
    assert sorted(taken) == want
    with pytest.raises(ringfeed.UsageError, match=r"begun on 2 machine\(s\)"):
        open_packed(0, 3, 1).load_state_dict(mid)


def test_the_node_partition_takes_the_launchers_ranks_and_checks_them(datasets, monkeypatch):
    path = datasets.positional(n=2000)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    loader = open_loader(path, rank=1, world_size=4, partition="node")
    assert loader.state_dict()["node_ranks"] == 2
    assert open_loader(path, rank=1, world_size=4).state_dict()["node_ranks"] == 0
    with pytest.raises(ringfeed.UsageError, match="node_ranks 3 does not divide world_size 4"):
        open_loader(path, rank=1, world_size=4, partition="node", node_ranks=3)
    with pytest.raises(ringfeed.UsageError, match="node_ranks"):
        open_loader(path, rank=1, world_size=4, node_ranks=2)  # without partition="node"


def test_a_cache_needs_both_options(served, datasets, tmp_path):
    root, server = served
    url = shard_url(server, root, Path(datasets.positional(shards=3)).stem)
    with pytest.raises(ringfeed.UsageError, match="cache_dir needs cache_size"):
        open_loader(url, cache_dir=str(tmp_path))
    with pytest.raises(ringfeed.UsageError, match="cache_size needs cache_dir"):
        open_loader(url, cache_size="1GiB")


def test_dataset_info_reads_the_header_and_shows_no_credentials(served, datasets):
    root, server = served
    local = ringfeed.dataset_info(datasets.positional(n=500))
    url = shard_url(server, root, Path(datasets.positional(n=500)).stem)
    secret = url.replace("http://", "http://reader:SECRETpw@") + "?X-Amz-Signature=SECRETsig"
    info = ringfeed.dataset_info(secret)
    assert info.samples == local.samples == 500
    assert info.id == local.id
    assert info.paths == (url,)
    with pytest.raises(OSError) as refused:
        ringfeed.dataset_info(secret.replace("/positional", "/private/positional"))
    assert "403" in str(refused.value) and "SECRET" not in str(refused.value)
    with pytest.raises(FileNotFoundError):
        ringfeed.dataset_info(server.url("/no-such.rfd"))


def test_https_needs_the_ca_bundle_option(datasets, tmp_path):
    if not os.access(OPENSSL, os.X_OK):
        pytest.skip("openssl is not installed (apt-get install openssl)")
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    root = tmp_path / "root"
    root.mkdir()
    local = datasets.positional(n=500)
    shutil.copy(local, root / "d.rfd")
    server = Nginx(root, tmp_path / "nginx", str(cert), str(key))
    try:
        with pytest.raises(OSError) as untrusted:
            ringfeed.dataset_info(server.url("/d.rfd"))
        assert "certificate" in str(untrusted.value)
        loader = open_loader(server.url("/d.rfd"), ca_bundle=str(cert))
        assert epoch_indices(loader) == epoch_indices(open_loader(local))
        with pytest.raises(ringfeed.UsageError):
            ringfeed.dataset_info(server.url("/d.rfd"), remote_in_flight=0)
    finally:
        server.stop()

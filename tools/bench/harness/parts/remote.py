"""Remote datasets (issue 42): `ringfeed read` of a dataset served by nginx through an emulated
link (ringfeed-link-proxy, tools/bench/link_proxy/: a round trip, a rate cap) against curl's parallel download of the
same bytes on the same link, interleaved round by round, and ringfeed.Loader's first batch and
epoch against the peers' whole-shard downloads (tools/bench/remote_read.py). Needs nginx and curl
where it runs (the CPU machine has them; the GPU machines do not)."""

import os
import shutil
import signal
import sys

from .. import data, measure
from ..context import BENCH
from ..measure import fmt, load_json, median, ratio
from ..registry import part


NO_NET = ("no nginx, curl or libcurl.so.4 here (apt-get install nginx curl libcurl4, or carry "
          "them: tools/bench/carry.sh net)")


def net_tools(ctx):
    """nginx, curl (carried, else this machine's; '' where neither) and the environment ringfeed
    needs to load libcurl (None where it cannot)."""
    return (data.carried_tool(ctx, "netpkg", "nginx", "/usr/sbin/nginx"),
            data.carried_tool(ctx, "netpkg", "curl", "/usr/bin/curl"), data.libcurl_env(ctx))


@part("remote", budget=300, about="`ringfeed read` of an http:// dataset through an emulated link "
      "against curl's parallel ranges of the same bytes (tools/bench/remote_read.py)",
      settings={"gb": 2.0, "shards": 4, "rtt_ms": "0,20,50", "rate_mbps": 0.0, "in_flight": 16,
                "rounds": 3, "server_cpus": "auto", "client_cpus": "auto"},
      tiny={"gb": data.TINY_GB * 20, "rtt_ms": "20", "rounds": 1})
def remote(ctx, s):
    # The server and the link are other machines in a real run: "auto" puts nginx and the proxy
    # on CPU 0 and the clients on the rest where there are at least 2 ("" pins nothing).
    cpus = sorted(os.sched_getaffinity(0))
    auto = {"server_cpus": str(cpus[0]), "client_cpus": ",".join(map(str, cpus[1:]))}
    pins = []
    for name in ("server_cpus", "client_cpus"):
        value = getattr(s, name)
        value = (auto[name] if len(cpus) >= 2 else "") if value == "auto" else value
        if value:
            pins += [f"--{name.replace('_', '-')}", value]
    nginx, curl, env = net_tools(ctx)
    if not (nginx and curl and env is not None):
        ctx.skip("remote", NO_NET)
        return
    path = data.synthetic(ctx, s.gb, seed=4, extra=("--shards", str(s.shards)))
    site = ctx.extension(ctx.after)
    out = ctx.log_path("remote", ".json")
    r = ctx.run("remote_read", [ctx.python_exe, os.path.join(BENCH, "remote_read.py"), path,
                                "--ringfeed", ctx.after.tool("ringfeed"), "--rtt-ms", s.rtt_ms,
                                "--rate-mbps", s.rate_mbps, "--in-flight", s.in_flight,
                                "--rounds", s.rounds, "--python-path", site, "--json", out,
                                "--nginx", nginx, "--curl", curl, *pins],
              env=dict(ctx.python_env(ctx.after), **env))
    for line in r.out.splitlines():
        if line.startswith("rtt "):
            ctx.say(line)
    if not r.ok:
        ctx.fail(f"remote_read.py: {r.tail(3)}")
    for row in load_json(out)["results"]:
        key = f"rtt{row['rtt_ms']:g}ms"
        for name in ("ringfeed_gb_per_s", "curl_gb_per_s", "ratio", "loader_first_batch_s",
                     "loader_open_s", "loader_epoch_s", "whole_first_batch_s", "whole_epoch_s",
                     "chunk_s", "first_batch_over_budget"):
            if name in row:
                ctx.figure(f"{key}_{name}", row[name])


@part("cache", budget=240, about="the node-local cache's eviction, Belady by the known order "
      "against LRU, on the same shuffled ringfeed.Loader epochs of an http:// dataset: bytes "
      "fetched per epoch at cache sizes of fractions of it, by `ranks` processes sharing it "
      "(tools/bench/cache_policy.py)",
      settings={"gb": 0.4, "chunk": "1MiB", "fractions": "0.25,0.5,0.75", "epochs": 4,
                "ranks": 1},
      tiny={"gb": data.TINY_GB * 20, "chunk": "16KiB", "fractions": "0.5", "epochs": 2})
def cache(ctx, s):
    nginx, _, env = net_tools(ctx)
    if not (nginx and env is not None):
        ctx.skip("cache", NO_NET)
        return
    path = data.synthetic(ctx, s.gb, seed=3, extra=("--chunk-size", s.chunk))
    ctx.extension(ctx.after)
    out = ctx.log_path("cache", ".json")
    r = ctx.run("cache_policy", [ctx.python_exe, os.path.join(BENCH, "cache_policy.py"), path,
                                 "--fractions", s.fractions, "--epochs", s.epochs,
                                 "--ranks", s.ranks, "--json", out, "--nginx", nginx],
              env=dict(ctx.python_env(ctx.after), **env))
    for line in r.out.splitlines():
        if line.startswith("cache "):
            ctx.say(line)
    if not r.ok:
        ctx.fail(f"cache_policy.py: {r.tail(3)}")
    for row in load_json(out)["results"]:
        key = f"{row['policy']}_{row['fraction']:g}_{row['ranks']}ranks"
        ctx.figure(f"{key}_fetched_over_least", row["over_least"])
        ctx.figure(f"{key}_fetched_over_uncached", row["fetched_bytes"] / row["uncached_bytes"])


@part("partition", budget=120, about="what the node partition costs the shuffle: the per-batch "
      "label entropy of a label-sorted dataset under the global partition and partition=\"node\" "
      "at several machine counts, against a uniform shuffle's (tools/bench/partition_entropy.py)",
      settings={"samples": 60000, "world": 8, "batch": 256, "epochs": 2},
      tiny={"samples": 6000, "world": 4, "epochs": 1})
def partition(ctx, s):
    path = ctx.work_path(f"sorted-{s.samples}.rfd")
    if not os.path.exists(path):
        r = ctx.run("make_sorted", [ctx.after.tool("ringfeed-convert"), "synthetic", "--samples",
                                    s.samples, "--shape", "1,28,28", "--classes", 10, "--seed", 1,
                                    "--order", "sorted", "--chunk-size", "64KiB", "-q", "-o",
                                    path])
        if not r.ok:
            ctx.fail(f"ringfeed-convert synthetic: {r.tail(3)}")
            return
    ctx.extension(ctx.after)
    out = ctx.log_path("partition", ".json")
    r = ctx.run("partition_entropy", [ctx.python_exe, os.path.join(BENCH, "partition_entropy.py"),
                                      path, "--world", s.world, "--batch", s.batch, "--epochs",
                                      s.epochs, "--json", out], env=ctx.python_env(ctx.after))
    for line in r.out.splitlines():
        if "bits a batch" in line or "samples," in line:
            ctx.say(line)
    if not r.ok:
        ctx.fail(f"partition_entropy.py: {r.tail(3)}")
        return
    for row in load_json(out)["rows"]:
        key = row["layout"].split(":")[0].replace(" ", "_")
        if row["layout"].startswith("node"):
            key = "node_" + row["layout"].split(": ")[1].split(" ")[0] + "_machines"
        ctx.figure(f"{key}_bits", row["bits"])
        ctx.figure(f"{key}_share_of_uniform", row["share"])


@part("remote-train", budget=360, about="`ringfeed train` of an http:// dataset (nginx "
      "through ringfeed-link-proxy's emulated link) against min(the link, compute): curl's "
      "parallel ranges of the same bytes and `ringfeed read` over the same link, the model alone "
      "(ringfeed-bench-compute) and the same epoch from the local page cache, rounds interleaved; "
      "the first batch against 4 round trips and a chunk; a second run from the warm node-local "
      "cache (bytes fetched, samples/s); server_cpus N > 0 puts nginx and the proxy on the first N "
      "CPUs and every client (curl, ringfeed) on the rest, as if they were other machines",
      settings={"gb": 4.0, "rtt_ms": 20.0, "rates_mbps": "8000,0", "in_flight": 16, "rounds": 2,
                "batch": 256, "cache": True, "flags": "", "server_cpus": 0},
      tiny={"gb": data.TINY_GB * 20, "rates_mbps": "0", "rounds": 1, "batch": 64})
def remote_train(ctx, s):
    nginx, curl, curl_env = net_tools(ctx)
    if not (nginx and curl and curl_env is not None):
        ctx.skip("remote-train", NO_NET)
        return
    sys.path.insert(0, BENCH)
    import remote_read
    remote_read.NGINX, remote_read.CURL = nginx, curl
    env = dict(ctx.env, **curl_env)
    path = data.synthetic(ctx, s.gb, seed=6)
    samples = data.samples_in(s.gb)
    sample_bytes = os.path.getsize(path) / samples  # the link carries the file's bytes
    flags = (["--conv", "4,8", "--hidden", "16"] if ctx.cpu else []) + s.flags.split()
    deep = ["--remote-in-flight", s.in_flight, "--queue-depth", s.in_flight, "--ring-slots",
            max(32, 2 * s.in_flight)]
    data.warm(path)  # the server reads from its page cache: the link is what is measured
    work = os.path.join(ctx.work, "remote-train")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    access = os.path.join(work, "access.log")
    cpus = sorted(os.sched_getaffinity(0))
    if 0 < s.server_cpus < len(cpus):  # the clients inherit the harness's own affinity
        remote_read.SERVER_CPUS = set(cpus[:s.server_cpus])
        ctx.say(f"nginx and the proxy on CPUs {cpus[:s.server_cpus]}, the clients on the other "
                f"{len(cpus) - s.server_cpus}")
    server, port = remote_read.start_nginx(os.path.dirname(path), work, access_log=access)
    if remote_read.SERVER_CPUS:
        os.sched_setaffinity(0, set(cpus[s.server_cpus:]))
    rows = {}
    try:
        for rate in (float(x) for x in str(s.rates_mbps).split(",")):
            proxy, pport = remote_read.start_proxy(ctx.after.tool("ringfeed-link-proxy"), port,
                                                   s.rtt_ms, rate)
            base = f"http://127.0.0.1:{pport}"
            url = f"{base}/{os.path.basename(path)}"
            try:
                for r in range(s.rounds):
                    row = rows.setdefault((rate, r), {})
                    tag = f"{rate:g}mbps-{r}"
                    link = remote_read.run_curl([path], base, s.in_flight, work)
                    row["link_gb_per_s"] = link["bytes"] / link["seconds"] / 1e9
                    run = measure.read(ctx, ctx.after, f"read-{tag}", url, *deep, cold=False,
                                       env=env)
                    row["reader_gb_per_s"] = run and run["gb_per_s"]
                    if ctx.gpus:
                        row["compute"] = measure.compute(
                            ctx, ctx.after, f"compute-{tag}", s.batch, "--bf16", "on", "--graph",
                            "on", steps=max(100, samples // s.batch // 2))
                    m = measure.train(ctx, ctx.after, f"local-{tag}",
                                      ["--data", path, "--epochs", 1, "--batch-size", s.batch,
                                       "--io", "buffered", *flags])
                    row["local"] = m.last["samples_per_s"] if m and m.epochs else None
                    m = measure.train(ctx, ctx.after, f"remote-{tag}",
                                      ["--data", url, "--epochs", 1, "--batch-size", s.batch,
                                       *deep, *flags], env=env)
                    if m and m.epochs:
                        row.update(remote=m.last["samples_per_s"],
                                   waited=m.last["data_wait_share"],
                                   first_batch_ms=m.end.get("first_batch_ms"))
                    remote_train_row(ctx, row, rate, r, sample_bytes)
                row = rows[(rate, s.rounds - 1)]
                row["chunk_s"] = remote_read.run_chunk(base, os.path.basename(path), 4096,
                                                       remote_read.RANGE)
                budget_ms = 1000 * (4 * s.rtt_ms / 1000 + row["chunk_s"])
                ctx.say(f"{rate:g} Mbit/s: first batch {fmt(row.get('first_batch_ms'), '.0f')} "
                        f"ms from the epoch's start; 4 round trips + a 4 MiB chunk "
                        f"{budget_ms:.0f} ms")
                ctx.figure(f"rate{rate:g}_first_batch_budget_ms", budget_ms)
                if s.cache:
                    remote_train_cached(ctx, s, url, path, access, deep, flags, env, rate)
            finally:
                proxy.stdin.close()
                proxy.wait(10)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(10)
        os.sched_setaffinity(0, set(cpus))
        remote_read.SERVER_CPUS = None
    ctx.figure("rounds", {f"{rate:g}-{r}": row for (rate, r), row in rows.items()})
    for rate in dict.fromkeys(rate for rate, _ in rows):
        got = [row for (x, _), row in rows.items() if x == rate]
        for key in ("link_gb_per_s", "reader_gb_per_s", "compute", "local", "remote",
                    "over_bound", "over_reader_bound", "first_batch_ms"):
            ctx.figure(f"rate{rate:g}_{key}", median([row.get(key) for row in got]))
        ctx.say(f"{rate:g} Mbit/s, medians: remote {fmt(median([r.get('remote') for r in got]))}"
                f" samples/s, {fmt(median([r.get('over_bound') for r in got]), '.3f')} of "
                f"min(link, compute)")


def remote_train_row(ctx, row, rate, r, sample_bytes):
    """Says round R's line and sets its ratios: the remote epoch over min(curl's link, the model
    alone) and over min(ringfeed read's, the model alone), in samples/s."""
    link = row["link_gb_per_s"] * 1e9 / sample_bytes
    reader = row["reader_gb_per_s"] and row["reader_gb_per_s"] * 1e9 / sample_bytes
    compute = row.get("compute") or row.get("local")
    row["link_samples_per_s"] = link
    row["over_bound"] = ratio(row.get("remote"), min(link, compute) if compute else link)
    row["over_reader_bound"] = ratio(row.get("remote"), reader and (
        min(reader, compute) if compute else reader))
    ctx.say(f"{rate:g} Mbit/s round {r}: link (curl) {row['link_gb_per_s']:.3f} GB/s = "
            f"{link:,.0f} samples/s; ringfeed read {fmt(row['reader_gb_per_s'], '.3f')} GB/s; "
            f"model alone {fmt(row.get('compute'))}; local page-cached epoch "
            f"{fmt(row.get('local'))}; remote epoch {fmt(row.get('remote'))} samples/s (waited "
            f"{fmt(row.get('waited'), '.2f')}), {fmt(row['over_bound'], '.3f')} of min(link, "
            f"compute), {fmt(row['over_reader_bound'], '.3f')} of min(read, compute)")


def remote_train_cached(ctx, s, url, path, access, deep, flags, env, rate):
    """Two runs through one node-local cache of twice the dataset: the first fills it, the second
    (a new process) should fetch nothing; each run's bytes fetched (nginx's log) and samples/s."""
    import remote_read
    cache = os.path.join(ctx.work, "remote-train", "cache")
    shutil.rmtree(cache, ignore_errors=True)
    size = 2 * os.path.getsize(path)
    for run in ("fill", "warm"):
        before = remote_read.logged_bytes(access)
        m = measure.train(ctx, ctx.after, f"cache-{run}-{rate:g}mbps",
                          ["--data", url, "--epochs", 1, "--batch-size", s.batch, *deep,
                           "--cache-dir", cache, "--cache-size", size, *flags], env=env)
        fetched = remote_read.logged_bytes(access) - before
        sps = m.last["samples_per_s"] if m and m.epochs else None
        ctx.figure(f"rate{rate:g}_cache_{run}_fetched_bytes", fetched)
        ctx.figure(f"rate{rate:g}_cache_{run}_samples_per_s", sps)
        ctx.say(f"{rate:g} Mbit/s, node-local cache, {run} run: fetched {fetched / 1e9:.3f} GB "
                f"of {os.path.getsize(path) / 1e9:.3f}; {fmt(sps)} samples/s")


"""Remote datasets (issue 42): `ringfeed read` of a dataset served by nginx through an emulated
link (ringfeed-link-proxy, tools/bench/link_proxy/: a round trip, a rate cap) against curl's parallel download of the
same bytes on the same link, interleaved round by round, and ringfeed.Loader's first batch and
epoch against the peers' whole-shard downloads (tools/bench/remote_read.py). Needs nginx and curl
where it runs (the CPU machine has them; the GPU machines do not)."""

import os

from .. import data
from ..context import BENCH
from ..measure import load_json
from ..registry import part


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
    for tool in ("/usr/sbin/nginx", "/usr/bin/curl"):
        if not os.access(tool, os.X_OK):
            ctx.skip("remote", f"{tool} is not installed here (apt-get install nginx curl)")
            return
    path = data.synthetic(ctx, s.gb, seed=4, extra=("--shards", str(s.shards)))
    site = ctx.extension(ctx.after)
    out = ctx.log_path("remote", ".json")
    r = ctx.run("remote_read", [ctx.python_exe, os.path.join(BENCH, "remote_read.py"), path,
                                "--ringfeed", ctx.after.tool("ringfeed"), "--rtt-ms", s.rtt_ms,
                                "--rate-mbps", s.rate_mbps, "--in-flight", s.in_flight,
                                "--rounds", s.rounds, "--python-path", site, "--json", out, *pins])
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
    if not os.access("/usr/sbin/nginx", os.X_OK):
        ctx.skip("cache", "/usr/sbin/nginx is not installed here (apt-get install nginx)")
        return
    path = data.synthetic(ctx, s.gb, seed=3, extra=("--chunk-size", s.chunk))
    ctx.extension(ctx.after)
    out = ctx.log_path("cache", ".json")
    r = ctx.run("cache_policy", [ctx.python_exe, os.path.join(BENCH, "cache_policy.py"), path,
                                 "--fractions", s.fractions, "--epochs", s.epochs,
                                 "--ranks", s.ranks, "--json", out], env=ctx.python_env(ctx.after))
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

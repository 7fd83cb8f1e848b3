#!/usr/bin/env python3
"""`ringfeed read` of a remote dataset against the best parallel download of the same bytes on
the same emulated link, in one run: nginx serves the dataset's files on loopback (from the page
cache), ringfeed-link-proxy (tools/bench/link_proxy/) adds a round trip (and a rate cap) in front
of it, and rounds alternate between

  ringfeed   `ringfeed read URL --remote-in-flight N --queue-depth N` (every chunk, checksums
             verified), and
  curl       one curl process fetching every file in 4 MiB ranges, N in parallel
             (`curl --parallel --parallel-max N`, output discarded): the download alone.

For each round trip: each tool's GB/s (median over the rounds), and ringfeed's share of curl's.

With --python-path (the built package), each round also times, from a fresh process:

  first      `ringfeed.Loader(URL, batch_size=256, device="cpu")` to its first batch, and to the
             end of its first epoch; against
  whole      the peers' scheme (MosaicML Streaming, litdata): the same bytes as 64 MB shards,
             each downloaded whole before a sample of it is read: the first batch once the first
             is down (curl, one GET), the epoch once every one is (curl, N in parallel); and
  chunk      one chunk's range alone on a connection already open (curl's time from the first
             byte to the last): the "one chunk's transfer" of issue 42's first-batch goal,
             4 round trips + one chunk.

With --server-cpus and --client-cpus (for example 0 and 1), nginx and the proxy run on the
first CPUs and every client (ringfeed, curl, the Loader) on the others, as the server and the link
are other machines in a real run: on a 2-core machine they otherwise share the client's cores,
and the client that spends more CPU a byte (ringfeed checks every chunk's checksum and copies it
into the ring) slows the link it is measured against.

    remote_read.py DATASET.rfd --ringfeed build/bin/ringfeed --rtt-ms 0,20,50 --rounds 3
"""

import argparse
import glob
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NGINX = "/usr/sbin/nginx"  # --nginx and --curl (a carried copy: tools/bench/carry.sh net)
CURL = "/usr/bin/curl"
RANGE = 4 << 20


SERVER_CPUS = None  # --server-cpus and --client-cpus, as sets
CLIENT_CPUS = None


def on_cpus(cpus):
    """A preexec_fn that pins the child to CPUS (None: no pinning)."""
    return None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))


def server(cmd, **kw):
    return subprocess.Popen(cmd, preexec_fn=on_cpus(SERVER_CPUS), **kw)


def client(cmd, **kw):
    return subprocess.run(cmd, preexec_fn=on_cpus(CLIENT_CPUS), **kw)


def cpu_list(text):
    """"0,2-3" as {0, 2, 3}."""
    out = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(root: str, work: str, access_log: str = ""):
    """nginx serving ROOT on a free loopback port (with ACCESS_LOG: each request's body bytes
    logged there); (process, port)."""
    port = free_port()
    temps = "".join(f" {t}_temp_path {work}/{t};\n"
                    for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    log = (f" log_format bytes '$body_bytes_sent';\n access_log {access_log} bytes;\n"
           if access_log else " access_log off;\n")
    conf = os.path.join(work, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"daemon off;\nmaster_process off;\npid {work}/nginx.pid;\n"
                f"error_log {work}/error.log warn;\nevents {{}}\nhttp {{\n{log}"
                f"{temps} sendfile on;\n keepalive_requests 100000;\n"
                f" server {{\n listen 127.0.0.1:{port};\n root {root};\n }}\n}}\n")
    proc = server([NGINX, "-p", work, "-e", f"{work}/error.log", "-c", conf])
    wait_listening(port, proc)
    return proc, port


def logged_bytes(log: str) -> int:
    """The body bytes nginx has logged (start_nginx's ACCESS_LOG), once the log has stopped
    growing."""
    last = -1
    while True:
        time.sleep(0.25)
        with open(log) as f:
            now = sum(int(line) for line in f if line.strip().isdigit())
        if now == last:
            return now
        last = now


def start_proxy(proxy: str, port: int, rtt_ms: float, rate_mbps: float):
    proc = server([proxy, "--upstream", f"127.0.0.1:{port}", "--rtt-ms", str(rtt_ms),
                   "--rate-mbps", str(rate_mbps)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                  text=True)
    line = proc.stdout.readline()
    if not line.startswith("port "):
        raise SystemExit(f"{proxy} did not start: {line!r}")
    return proc, int(line.split()[1])


def wait_listening(port: int, proc) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    raise SystemExit(f"server on port {port} did not start")


def run_ringfeed(ringfeed: str, url: str, in_flight: int, work: str) -> dict:
    out = os.path.join(work, "read.json")
    cmd = [ringfeed, "read", url, "--remote-in-flight", str(in_flight), "--queue-depth",
           str(in_flight), "--ring-slots", str(max(16, in_flight)), "--json", out]
    r = client(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"ringfeed read failed: {r.stdout}{r.stderr}")
    run = json.load(open(out))["runs"][0]
    return {"bytes": run["stored_bytes"] or run["bytes"], "seconds": run["seconds"]}


def run_curl(files, base_url: str, in_flight: int, work: str) -> dict:
    cfg = os.path.join(work, "curl.cfg")
    total = 0
    transfers = []
    for path in files:
        size = os.path.getsize(path)
        total += size
        for at in range(0, size, RANGE):
            end = min(size, at + RANGE) - 1
            transfers.append(f'url = "{base_url}/{os.path.basename(path)}"\n'
                             f'range = "{at}-{end}"\noutput = "/dev/null"\nfail\n'
                             f'write-out = "%{{size_download}}\\n"\n')
    with open(cfg, "w") as f:  # "next" between: each transfer its own range
        f.write("next\n".join(transfers))
    t0 = time.monotonic()
    r = client([CURL, "-sS", "--parallel", "--parallel-max", str(in_flight), "-K", cfg],
                       capture_output=True, text=True)
    got = sum(int(x) for x in r.stdout.split())
    if r.returncode == 0 and got != total:
        raise SystemExit(f"curl fetched {got} bytes of {total}")
    seconds = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"curl failed: {r.stderr}")
    return {"bytes": total, "seconds": seconds}


FIRST_BATCH = '''
import json, sys, time
import ringfeed
t0 = time.monotonic()
loader = ringfeed.Loader(sys.argv[1], batch_size=256, device="cpu")
t_open = time.monotonic()
n = 0
for i, (x, y) in enumerate(loader):
    if i == 0:
        t_first = time.monotonic()
    n += int(y.shape[0])
t_epoch = time.monotonic()
print(json.dumps({"open_s": t_open - t0, "first_batch_s": t_first - t0,
                  "epoch_s": t_epoch - t0, "samples": n}))
'''


def run_first_batch(python_path: str, url: str) -> dict:
    env = dict(os.environ, PYTHONPATH=python_path)
    r = client([sys.executable, "-c", FIRST_BATCH, url], capture_output=True, text=True,
                       env=env)
    if r.returncode != 0:
        raise SystemExit(f"ringfeed.Loader failed: {r.stdout}{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


SHARD = 64 << 20  # MosaicML Streaming's and litdata's default shard size


def run_whole_shards(files, base_url: str, in_flight: int, work: str) -> dict:
    """The peers' scheme on the same bytes: the data as 64 MB shards (each 64 MiB of the files
    stands for one shard object), each downloaded whole before a sample of it is read: the first
    batch once the first shard is down (curl, one GET), the epoch once every shard is, `in_flight`
    at a time (curl --parallel)."""
    t0 = time.monotonic()
    name = os.path.basename(files[0])
    first = client([CURL, "-sS", "-f", "-r", f"0-{SHARD - 1}", "-o", "/dev/null",
                            f"{base_url}/{name}"], capture_output=True)
    t_first = time.monotonic() - t0
    cfg = os.path.join(work, "whole.cfg")
    shards = []
    for path in files:
        size = os.path.getsize(path)
        for at in range(0, size, SHARD):
            if path == files[0] and at == 0:
                continue  # the first shard, down already
            shards.append(f'url = "{base_url}/{os.path.basename(path)}"\n'
                          f'range = "{at}-{min(size, at + SHARD) - 1}"\noutput = "/dev/null"\n'
                          f"fail\n")
    with open(cfg, "w") as f:
        f.write("next\n".join(shards))
    rest = client([CURL, "-sS", "--parallel", "--parallel-max", str(in_flight), "-K",
                           cfg], capture_output=True)
    if first.returncode != 0 or rest.returncode != 0:
        raise SystemExit(f"curl failed: {first.stderr}{rest.stderr}")
    return {"first_batch_s": t_first, "epoch_s": time.monotonic() - t0}


def run_chunk(base_url: str, name: str, offset: int, length: int) -> float:
    """One chunk's transfer time on an open connection: the range fetched twice on one
    connection (curl reuses it), the second's first byte to last byte."""
    url = f"{base_url}/{name}"
    fmt = "%{time_starttransfer} %{time_total}\n"
    r = client([CURL, "-sS", "-f", "-r", f"{offset}-{offset + length - 1}", "-o",
                        "/dev/null", "-w", fmt, url, "-r", f"{offset}-{offset + length - 1}",
                        "-o", "/dev/null", "-w", fmt, url], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"curl failed: {r.stderr}")
    start, total = (float(x) for x in r.stdout.split()[-2:])
    return total - start


def main() -> None:
    global SERVER_CPUS, CLIENT_CPUS, NGINX, CURL
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset", help="a local .rfd dataset (one file, or the shards' base name)")
    p.add_argument("--ringfeed", required=True)
    p.add_argument("--proxy", help="ringfeed-link-proxy (default: beside --ringfeed)")
    p.add_argument("--python-path", help="the built package's directory: also time the first "
                   "batch and epoch of ringfeed.Loader against whole-shard downloads")
    p.add_argument("--rtt-ms", default="0,20,50")
    p.add_argument("--rate-mbps", type=float, default=0.0)
    p.add_argument("--in-flight", type=int, default=16)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--server-cpus", help="run nginx and the proxy on these CPUs (\"0\", \"0-1\")")
    p.add_argument("--client-cpus", help="run ringfeed, curl and the Loader on these CPUs")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--nginx", default=NGINX)
    p.add_argument("--curl", default=CURL)
    a = p.parse_args()
    NGINX, CURL = a.nginx, a.curl
    SERVER_CPUS = cpu_list(a.server_cpus) if a.server_cpus else None
    CLIENT_CPUS = cpu_list(a.client_cpus) if a.client_cpus else None
    a.proxy = a.proxy or os.path.join(os.path.dirname(a.ringfeed), "ringfeed-link-proxy")
    for tool in (NGINX, CURL, a.proxy):
        if not os.access(tool, os.X_OK):
            raise SystemExit(f"{tool} is not installed")
    stem = a.dataset[:-4] if a.dataset.endswith(".rfd") else a.dataset
    files = sorted(glob.glob(stem + "-*-of-*.rfd")) or [a.dataset]
    root = os.path.dirname(os.path.abspath(files[0]))
    for path in files:  # nginx serves from the page cache: the link is what is measured
        with open(path, "rb") as f:
            while f.read(16 << 20):
                pass
    results = []
    with tempfile.TemporaryDirectory() as work:
        nginx, port = start_nginx(root, work)
        try:
            for rtt in (float(x) for x in a.rtt_ms.split(",")):
                proxy, pport = start_proxy(a.proxy, port, rtt, a.rate_mbps)
                base = f"http://127.0.0.1:{pport}"
                url = f"{base}/{os.path.basename(files[0])}"
                got = {"ringfeed": [], "curl": []}
                first = {"loader": [], "whole": [], "chunk_s": []}
                try:
                    for k in range(a.rounds):  # interleaved, the first alternating
                        order = ("ringfeed", "curl") if k % 2 == 0 else ("curl", "ringfeed")
                        for tool in order:
                            r = (run_ringfeed(a.ringfeed, url, a.in_flight, work)
                                 if tool == "ringfeed" else
                                 run_curl(files, base, a.in_flight, work))
                            got[tool].append(r["bytes"] / r["seconds"] / 1e9)
                        if a.python_path:
                            first["loader"].append(run_first_batch(a.python_path, url))
                            first["whole"].append(run_whole_shards(files, base, a.in_flight, work))
                            first["chunk_s"].append(
                                run_chunk(base, os.path.basename(files[0]), 4096, RANGE))
                finally:
                    proxy.stdin.close()
                    proxy.wait(10)
                row = {"rtt_ms": rtt, "rate_mbps": a.rate_mbps, "in_flight": a.in_flight,
                       "ringfeed_gb_per_s": statistics.median(got["ringfeed"]),
                       "curl_gb_per_s": statistics.median(got["curl"]), "rounds": got}
                row["ratio"] = row["ringfeed_gb_per_s"] / row["curl_gb_per_s"]
                results.append(row)
                print(f"rtt {rtt:g} ms, {a.in_flight} in flight: ringfeed "
                      f"{row['ringfeed_gb_per_s']:.3f} GB/s, curl {row['curl_gb_per_s']:.3f} "
                      f"GB/s, ratio {row['ratio']:.3f}", flush=True)
                if a.python_path:
                    med = statistics.median
                    row["first"] = first
                    row["loader_first_batch_s"] = med(r["first_batch_s"] for r in first["loader"])
                    row["loader_open_s"] = med(r["open_s"] for r in first["loader"])
                    row["loader_epoch_s"] = med(r["epoch_s"] for r in first["loader"])
                    row["whole_first_batch_s"] = med(r["first_batch_s"] for r in first["whole"])
                    row["whole_epoch_s"] = med(r["epoch_s"] for r in first["whole"])
                    row["chunk_s"] = med(first["chunk_s"])
                    budget = 4 * rtt / 1000 + row["chunk_s"]
                    row["first_batch_over_budget"] = row["loader_first_batch_s"] / budget
                    print(f"rtt {rtt:g} ms, first batch: Loader {row['loader_first_batch_s']:.3f} s "
                          f"(open {row['loader_open_s']:.3f} s; 4 RTT + a chunk "
                          f"{budget:.3f} s), whole shard {row['whole_first_batch_s']:.3f} s; "
                          f"epoch: Loader {row['loader_epoch_s']:.3f} s, whole shards "
                          f"{row['whole_epoch_s']:.3f} s", flush=True)
        finally:
            nginx.send_signal(signal.SIGTERM)
            nginx.wait(10)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"dataset": a.dataset, "files": len(files), "results": results}, f,
                      indent=1)


if __name__ == "__main__":
    main()

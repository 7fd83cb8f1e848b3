"""One rank of test_state_world_size_torchrun.py, started by torchrun (gloo on the CPU): the loader
takes its rank and world size from torch.distributed, every rank loads rank 0's saved state (the
file --state), takes --batches batches (0: the rest of the epoch), and the ranks' sample indices
are gathered to rank 0, which writes them and its own state_dict(), alone, to --out (JSON)."""

import argparse
import json

import torch.distributed as dist

import ringfeed


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--batches", type=int, default=0)
    p.add_argument("--state")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    dist.init_process_group("gloo")
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        # The options of conftest.DEFAULTS, so one process's emulation gives the same batches.
        loader = ringfeed.Loader(args.data, args.batch_size, device="cpu", dtype="uint8",
                                 io="buffered", shuffle_window=3, ring_slots=4, seed=5)
        assert (loader.rank, loader.world_size) == (rank, world)
        if args.state:
            with open(args.state) as f:
                loader.load_state_dict(json.load(f))
        counts = (loader.epoch_samples, len(loader))
        seen = []
        for samples, _ in loader:
            seen.extend(samples.indices)
            if len(seen) == args.batches * args.batch_size:
                break
        gathered = [None] * world
        dist.all_gather_object(gathered, {"seen": seen, "counts": counts})
        if rank == 0:
            with open(args.out, "w") as f:
                json.dump({"ranks": gathered, "state": loader.state_dict()}, f)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

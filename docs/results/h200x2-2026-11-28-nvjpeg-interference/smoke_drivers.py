# Device smoke check (not part of the tree): two epochs of the nvJPEG loader, rate and description.
import sys, time, torch, ringfeed
data = sys.argv[1]
for epoch in range(int(sys.argv[2]) if len(sys.argv) > 2 else 2):
    loader = ringfeed.Loader(data, 256, image_size=224, device="cuda", dtype="bfloat16",
                             layout="NHWC", seed=epoch)
    t0, n = time.perf_counter(), 0
    for x, y in loader:
        n += torch.from_dlpack(x).shape[0]
    torch.cuda.synchronize()
    s = time.perf_counter() - t0
    print(f"epoch {epoch}: {n} images in {s:.2f} s, {n / s:.0f}/s; {loader!r}", flush=True)
    loader.close()

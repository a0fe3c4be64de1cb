# One trial of a rank of two (see README.md): python repro.py RANK STORE MODE [SLEEP_S]
import sys, time
from datetime import timedelta
import torch, torch.distributed as dist
rank, store, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
g = dist.new_group(backend="gloo", timeout=timedelta(seconds=1))
if rank == 0:
    out = [torch.zeros(1, dtype=torch.int64) for _ in range(2)]
    try:
        dist.all_gather(out, torch.tensor([1]), group=g)
    except RuntimeError as e:
        print("caught", str(e)[:80], file=sys.stderr, flush=True)
    if mode == "destroy":
        dist.destroy_process_group()
        print("destroyed", file=sys.stderr, flush=True)
    print("end", file=sys.stderr, flush=True)
else:
    time.sleep(float(sys.argv[4]))

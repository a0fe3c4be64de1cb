"""All-reduce time of a gradient-sized buffer across this host's GPUs (torchrun --nproc_per_node=W
allreduce.py): 37.6 M fp32 values (the 8L512D model's gradients, 150 MB) and the same in bf16,
20 timed calls after 5 warm-up ones; rank 0 prints one JSON line (ms per call, bus bandwidth)."""
import json
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
for dtype in (torch.float32, torch.bfloat16):
    x = torch.ones(37_627_392, dtype=dtype, device="cuda")
    for _ in range(5):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) / 20 * 1e3
    size = x.numel() * x.element_size()
    if rank == 0:
        print(json.dumps({"world": world, "dtype": str(dtype), "MB": size / 1e6, "ms": round(ms, 2),
                          "bus_GB_s": round(2 * (world - 1) / world * size / ms / 1e6, 1)}), flush=True)
dist.destroy_process_group()

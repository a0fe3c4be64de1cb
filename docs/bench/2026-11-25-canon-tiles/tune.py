"""Time the Canon kernels' tiles on a GPU, forward and backward; prints JSON lines.

Run from the repository root: python3 docs/bench/2026-11-25-canon-tiles/tune.py > tune.jsonl
The forward (`canon_conv`) over tile (rows × channels) × warps, the backward (`canon_conv_bwd`)
over block shapes the first sweep (docs/bench/2026-11-24-h200-canon-strips/) did not try
(larger and wider chunks) × programs per SM × minimum strip. Default Canon layer: no bias, no
activation, residual. Shapes: the mini recipe's Canon widths [64, 512, C] (A and C: d = 512;
B: 3d; D: 2·swiglu_width(d)) and the 12L768D ones at batch 16 × 2048 (768, 2304, 4096).
triton.testing.do_bench (CUDA events, median); each line also has the current default's time.
The module's constants are set for each measurement and restored at the end.
"""
import itertools
import json

import torch
from triton.testing import do_bench

from playground.kernels import canon_triton as ct

SHAPES = [(64, 512, c) for c in (512, 1536, 2688)] + [(16, 2048, c) for c in (768, 2304, 4096)]
FWD = [(bt, bc, w) for bt in (16, 32, 64, 128) for bc in (64, 128, 256) for w in (2, 4, 8)
       if bt * bc <= 128 * 32 * w]  # at most 128 fp32 values of a tile per thread
BWD = [(8, 128, 4), (8, 128, 8), (8, 256, 4), (8, 256, 8), (16, 128, 4), (16, 128, 8), (32, 64, 4),
       (32, 128, 8), (4, 256, 4), (16, 64, 2)]
PER_SM, MIN_STRIP_CHUNKS = [1, 2], [1, 4]
NAMES = ("BLOCK_T", "BLOCK_C", "FWD_WARPS", "BWD_BLOCK_T", "BWD_BLOCK_C", "BWD_WARPS",
         "BWD_PROGRAMS_PER_SM", "BWD_MIN_STRIP")
saved = {k: getattr(ct, k) for k in NAMES}


def timed(fn) -> float:
    return round(1e3 * do_bench(fn, warmup=10, rep=60), 1)


gen = torch.Generator(device="cuda").manual_seed(0)
for b, t, c in SHAPES:
    x = torch.randn(b, t, c, device="cuda", dtype=torch.bfloat16, generator=gen)
    dy = torch.randn_like(x)
    w = torch.randn(c, 4, device="cuda", dtype=torch.bfloat16, generator=gen)
    fwd = lambda x=x, w=w: ct.canon_conv(x, w, None, False, True)  # noqa: E731
    bwd = lambda x=x, w=w, dy=dy: ct.canon_conv_bwd(dy, x, w, None, False, True)  # noqa: E731
    base = {"shape": [b, t, c], "default_fwd_us": timed(fwd), "default_bwd_us": timed(bwd),
            "floor_fwd_us": round(2 * x.numel() * 2 / 4.8e12 * 1e6, 1),
            "floor_bwd_us": round(3 * x.numel() * 2 / 4.8e12 * 1e6, 1)}
    for bt, bc, warps in FWD:
        ct.BLOCK_T, ct.BLOCK_C, ct.FWD_WARPS = bt, bc, warps
        print(json.dumps({**base, "pass": "fwd", "block_t": bt, "block_c": bc, "warps": warps,
                          "us": timed(fwd)}), flush=True)
    for k in NAMES[:3]:
        setattr(ct, k, saved[k])
    for (bt, bc, warps), per_sm, chunks in itertools.product(BWD, PER_SM, MIN_STRIP_CHUNKS):
        ct.BWD_BLOCK_T, ct.BWD_BLOCK_C, ct.BWD_WARPS = bt, bc, warps
        ct.BWD_PROGRAMS_PER_SM, ct.BWD_MIN_STRIP = per_sm, chunks * bt
        splits, strip = ct._strips(b, t, c, x.device)
        print(json.dumps({**base, "pass": "bwd", "block_t": bt, "block_c": bc, "warps": warps,
                          "per_sm": per_sm, "min_strip": chunks * bt, "splits": splits, "strip": strip,
                          "us": timed(bwd)}), flush=True)
    for k, v in saved.items():
        setattr(ct, k, v)

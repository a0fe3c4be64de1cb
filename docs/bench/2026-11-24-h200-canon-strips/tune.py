"""Sweep the Canon strip backward's launch constants on a GPU; prints JSON lines.

Run from the repository root: python3 docs/bench/2026-11-24-h200-canon-strips/tune.py > tune.jsonl
Times `canon_conv_bwd` alone (no bias, no activation, residual: the default Canon layer) with
triton.testing.do_bench at the standalone bench's shape [16, 2048, C] and at the mini recipe's
three Canon widths [64, 512, C] (A and C: d; B: 3d; D: 2·swiglu_width(d)), for every
(block T, block C, warps) × programs per SM × minimum strip below. The module's constants are
set for each measurement and restored at the end.
"""
import itertools
import json

import torch
from triton.testing import do_bench

from playground.kernels import canon_triton as ct

SHAPES = [(16, 2048, c) for c in (512, 768, 1536, 2304, 4096)] + \
         [(64, 512, c) for c in (512, 1536, 2688)]
BLOCKS = [(8, 128, 4), (8, 64, 2), (16, 64, 4), (16, 128, 8), (4, 128, 2)]
PER_SM = [1, 2, 4, 8, 16]
MIN_STRIP_CHUNKS = [1, 4, 16, 64]
saved = {k: getattr(ct, k) for k in ("BWD_BLOCK_T", "BWD_BLOCK_C", "BWD_WARPS",
                                      "BWD_PROGRAMS_PER_SM", "BWD_MIN_STRIP")}
gen = torch.Generator(device="cuda").manual_seed(0)
for b, t, c in SHAPES:
    x = torch.randn(b, t, c, device="cuda", dtype=torch.bfloat16, generator=gen)
    dy = torch.randn_like(x)
    w = torch.randn(c, 4, device="cuda", dtype=torch.bfloat16, generator=gen)
    floor_us = 5 * x.numel() * 2 / 4.8e12 * 1e6  # x, dy read (+halo), dx written; H200 4.8 TB/s
    for (bt, bc, warps), per_sm, chunks in itertools.product(BLOCKS, PER_SM, MIN_STRIP_CHUNKS):
        ct.BWD_BLOCK_T, ct.BWD_BLOCK_C, ct.BWD_WARPS = bt, bc, warps
        ct.BWD_PROGRAMS_PER_SM, ct.BWD_MIN_STRIP = per_sm, chunks * bt
        splits, strip = ct._strips(b, t, c, x.device)
        us = 1e3 * do_bench(lambda: ct.canon_conv_bwd(dy, x, w, None, False, True),
                            warmup=10, rep=40)
        print(json.dumps({"shape": [b, t, c], "block_t": bt, "block_c": bc, "warps": warps,
                          "per_sm": per_sm, "min_strip": chunks * bt, "splits": splits,
                          "strip": strip, "us": round(us, 1), "floor_us": round(floor_us, 1)}),
              flush=True)
for k, v in saved.items():
    setattr(ct, k, v)

"""Confirm stagetune.py's pick for the plain Canon backward: BWD_STAGES 1, 3 and 4 at the pinned
8-row, 4-warp chunk, at the widths the models launch it (Canon-A/C at d, Canon-B at 3d where the
RoPE fusion is off, Canon-D at 2·ff, and Mamba2's short conv with its SiLU inside and a bias),
interleaved over 5 rounds so that drift hits every setting alike; JSON lines (median of the
rounds, µs). Written on 2026-11-26.

Run from the repository root on a GPU: python3 docs/bench/2026-11-26-h200-mamba/stageconfirm.py > stageconfirm.jsonl
"""
import json
import statistics

import torch
from triton.testing import do_bench

from playground.kernels import canon_triton as ct

gen = torch.Generator(device="cuda").manual_seed(0)
cases = []
for name, (b, t, d) in {"mini": (64, 512, 512), "12L768D": (16, 2048, 768)}.items():
    ff2 = 2 * 64 * round(8 * d / 3 / 64)
    widths = [(c, False, False, True) for c in (d, 3 * d, ff2)] + [(2 * d + 128, True, True, False)]
    for c, act, bias, residual in widths:
        x = torch.randn(b, t, c, device="cuda", dtype=torch.bfloat16, generator=gen)
        w = torch.randn(c, 4, device="cuda", generator=gen)
        bb = torch.randn(c, device="cuda", generator=gen) if bias else None
        g = torch.randn_like(x)
        kind = f"{'shortconv' if act else 'plain'}_{c}"
        cases.append((name, kind, lambda x=x, w=w, bb=bb, g=g, act=act, residual=residual:
                      ct.canon_conv_bwd(g, x, w, bb, act, residual)))
times = {}
for _ in range(5):
    for name, kind, fn in cases:
        for stages in (1, 3, 4):
            ct.BWD_STAGES = stages
            times.setdefault((name, kind, stages), []).append(do_bench(fn, warmup=10, rep=60))
for (name, kind, stages), us in times.items():
    print(json.dumps({"shape": name, "kernel": kind, "stages": stages, "us": round(1e3 * statistics.median(us), 1),
                      "spread_us": round(1e3 * (max(us) - min(us)), 1)}))

"""Restricted vs full Triton autotuning of the SSD / GLA kernels we call (mamba_ssm's and fla's),
at the 12L768D shapes (16 × 2048): forward + backward time of the kernel entry, the wall time of
the first call (autotuning included), and every autotuned kernel's chosen configuration; JSON
lines. Written on 2026-11-26.

Run from the repository root on a GPU, one process per mode (restriction shrinks the autotuners
in place, so the modes cannot share a process):
    python3 docs/bench/2026-11-26-h200-mamba/autotune.py restricted > at_restricted.jsonl
    python3 docs/bench/2026-11-26-h200-mamba/autotune.py full > at_full.jsonl
(fla's GLA took over 200 s to tune fully on an H200: ``... full ssd_mamba`` runs only the SSD.)
"""
import json
import sys
import time

import torch
from triton.testing import do_bench

from playground.kernels import adapters as fast

mode, only = sys.argv[1], sys.argv[2:]  # restricted | full, then the entries to run (default: all)
gen = torch.Generator(device="cuda").manual_seed(0)
rand = lambda *s, dtype=torch.bfloat16: torch.randn(*s, device="cuda", dtype=dtype, generator=gen)
b, t = 16, 2048


def ssd():  # Mamba2 at d = 768: 16 heads of 96, state 64, chunk 64
    x, dt = rand(b, t, 16, 96), torch.nn.functional.softplus(rand(b, t, 16, dtype=torch.float32) - 3)
    a, bm, cm = -torch.rand(16, device="cuda", generator=gen) * 15 - 1, rand(b, t, 64), rand(b, t, 64)
    assert fast.available("mamba_ssm")  # imports its kernels past the package's __init__
    for z in (x, dt, bm, cm):
        z.requires_grad_(True)
    g = rand(b, t, 16, 96)
    return lambda: torch.autograd.backward(fast.ssd_mamba(x, dt, a, bm, cm, 64, mode), g)


def gla():  # GLA at d = 768: 4 heads, keys 96, values 192
    q, k, v = rand(b, t, 4, 96), rand(b, t, 4, 96), rand(b, t, 4, 192)
    gate = torch.nn.functional.logsigmoid(rand(b, t, 4, 96, dtype=torch.float32)) / 16
    for z in (q, k, v, gate):
        z.requires_grad_(True)
    g = rand(b, t, 4, 192)
    return lambda: torch.autograd.backward(fast.gla_fla(q, k, v, gate, 96 ** -0.5, mode), g)


for name, make, package in (("ssd_mamba", ssd, "mamba_ssm"), ("gla_fla", gla, "fla")):
    if only and name not in only:
        continue
    try:
        fn = make()
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        first = time.perf_counter() - start
        us = round(1e3 * do_bench(fn, warmup=10, rep=50), 1)
        print(json.dumps({"mode": mode, "entry": name, "fwd_bwd_us": us, "first_call_s": round(first, 1)}))
        for tuner in fast._autotuners(package):
            best = getattr(tuner, "best_config", None)
            if best is None:
                continue
            print(json.dumps({"mode": mode, "entry": name, "kernel": getattr(getattr(tuner, "base_fn", None), "__name__", repr(tuner.fn)),
                              "configs": len(tuner.configs), "best": str(best)}))
    except Exception as e:  # say so, go on to the next entry
        print(json.dumps({"mode": mode, "entry": name, "failed": f"{type(e).__name__}: {str(e)[:300]}"}))
    sys.stdout.flush()

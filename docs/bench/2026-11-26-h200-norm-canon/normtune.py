"""Canon-A/C fused with RMSNorm (playground::norm_canon, channel-block tiles, the norm's scale
given) against RMSNorm then Canon, on the GPU.

    python3 normtune.py            # one JSON line per (shape, kernel config) and per baseline

Shapes: the mini recipe's (64 × 512 × 512) and 12L768D's (16 × 2048 × 768); the residual stream x
in fp32 and the output in bf16, as under autocast. Kernel configs (module constants of
norm_canon_triton, set per config; median of triton.testing.do_bench, µs): the forward's tile and
warps, the backward's pipeline stages. Baselines, forward + backward through autograd, compiled,
GPU kernel time from the profiler (``device_us``, no host time): the unfused composition (inductor's
RMSNorm, our Canon kernel in fp32, the cast to bf16) and the fused op with its scale from torch (as
the layer calls it), at the default constants. Floor: the bytes the fused op must move at
4.8 TB/s (H200)."""
import itertools
import json

import torch
import torch.nn.functional as F
import triton

from playground.bench.measure import _device_seconds
from playground.kernels import canon_triton as ct
from playground.kernels import norm_canon_triton as m
from playground.layers.norms import rms_scale

SHAPES = {"mini": (64, 512, 512), "12L768D": (16, 2048, 768)}
bench = lambda fn: triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3  # noqa: E731


def inputs(shape):
    b, t, c = shape
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(b, t, c, device="cuda", generator=g)
    nw = 1 + torch.randn(c, device="cuda", generator=g) / 4
    w = torch.randn(c, 4, device="cuda", generator=g) / 4
    dy = torch.randn(b, t, c, device="cuda", generator=g).bfloat16()
    return x, nw, w, dy


def unfused(x, nw, w):
    return ct.canon_conv(F.rms_norm(x, (x.shape[-1],), nw, 1e-5), w, None, False, True).bfloat16()


def fused(x, nw, w):
    return m.norm_canon(x, rms_scale(x, 1e-5), nw, w, None, False, True, torch.bfloat16)


def main():
    defaults = m.BLOCK_T, m.BLOCK_C, m.FWD_WARPS, m.BWD_STAGES
    for name, shape in SHAPES.items():
        x, nw, w, dy = inputs(shape)
        n = x.numel()
        floor = {"fwd": n * (4 + 2), "bwd": n * (2 + 4 + 4)}  # x read, y written; dy and x read, dx written
        for label, fn in (("unfused_compiled", torch.compile(unfused)), ("fused_compiled", torch.compile(fused))):
            xg, nwg, wg = (v.clone().requires_grad_() for v in (x, nw, w))
            step = lambda: fn(xg, nwg, wg).backward(dy)  # noqa: E731
            for _ in range(3):
                step()
            print(json.dumps({"shape": name, "what": label, "device_us": round(_device_seconds(step, 20) * 1e6, 1),
                              "floor_us": round((floor["fwd"] + floor["bwd"]) / 4.8e6, 1)}), flush=True)
        r = rms_scale(x, 1e-5)
        for bt, bc, warps in itertools.product((8, 16, 32), (64, 128, 256), (2, 4, 8)):
            m.BLOCK_T, m.BLOCK_C, m.FWD_WARPS = bt, bc, warps
            us = bench(lambda: m.norm_canon(x, r, nw, w, None, False, True, torch.bfloat16))
            print(json.dumps({"shape": name, "what": "fwd", "BT": bt, "BC": bc, "warps": warps, "us": round(us, 1),
                              "floor_us": round(floor["fwd"] / 4.8e6, 1)}), flush=True)
        for stages in (1, 2, 3, 4):
            m.BWD_STAGES = stages
            us = bench(lambda: m.norm_canon_bwd(dy, x, r, nw, w, None, False, True))
            print(json.dumps({"shape": name, "what": "bwd", "stages": stages, "us": round(us, 1),
                              "floor_us": round(floor["bwd"] / 4.8e6, 1)}), flush=True)
        m.BLOCK_T, m.BLOCK_C, m.FWD_WARPS, m.BWD_STAGES = defaults


if __name__ == "__main__":
    main()

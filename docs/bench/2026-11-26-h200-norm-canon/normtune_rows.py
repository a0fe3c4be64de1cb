"""Canon-A/C fused with RMSNorm (playground::norm_canon) against RMSNorm then Canon, on the GPU.

    python3 normtune.py            # one JSON line per (shape, kernel config) and per baseline

Shapes: the mini recipe's (64 × 512 × 512) and 12L768D's (16 × 2048 × 768); the residual stream x
in fp32 and the output in bf16, as under autocast. Kernel configs: the forward's tile size and warps,
the backward's chunk size, warps, pipeline stages, programs per SM and shortest strip (module
constants, set per config; median of triton.testing.do_bench, µs). Baselines, forward + backward
through autograd, GPU kernel time from the profiler (``device_us``, no host time): the unfused
composition compiled by inductor (its RMSNorm, then our Canon kernel in fp32, then the cast to
bf16) and the fused op with the best configs found. Floor: the bytes that must move at 4.8 TB/s
(H200). The last line: the best configs, as stepcompare.py's settings."""
import itertools
import json

import torch
import torch.nn.functional as F
import triton

from playground.kernels import canon_triton as ct
from playground.kernels import norm_canon_triton as m

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


def main():
    from playground.bench.measure import _device_seconds

    compiled = torch.compile(unfused)
    best = {}
    for name, shape in SHAPES.items():
        x, nw, w, dy = inputs(shape)
        n = x.numel()
        floor = {"fwd": n * (4 + 2), "bwd": n * (2 + 4 + 4)}  # x read, y written; dy and x read, dx written
        fwd = []
        for elems, warps in itertools.product((512, 1024, 2048, 4096), (1, 2, 4, 8)):
            m.FWD_ELEMS, m.FWD_WARPS = elems, warps
            us = bench(lambda: m.norm_canon(x, nw, w, None, 1e-5, False, True, torch.bfloat16))
            fwd.append((us, elems, warps))
            print(json.dumps({"shape": name, "what": "fwd", "elems": elems, "warps": warps, "us": round(us, 1),
                              "floor_us": round(floor["fwd"] / 4.8e6, 1)}), flush=True)
        bwd = []
        for elems, warps, stages, per_sm, min_strip in itertools.product((512, 1024, 2048), (1, 2, 4), (1, 3),
                                                                          (4, 8, 16), (8, 32)):
            m.BWD_ELEMS, m.BWD_WARPS, m.BWD_STAGES = elems, warps, stages
            m.BWD_PROGRAMS_PER_SM, m.BWD_MIN_STRIP = per_sm, min_strip
            us = bench(lambda: m.norm_canon_bwd(dy, x, nw, w, None, 1e-5, False, True))
            bwd.append((us, elems, warps, stages, per_sm, min_strip))
            print(json.dumps({"shape": name, "what": "bwd", "elems": elems, "warps": warps, "stages": stages,
                              "per_sm": per_sm, "min_strip": min_strip, "us": round(us, 1),
                              "floor_us": round(floor["bwd"] / 4.8e6, 1)}), flush=True)
        best[name] = min(fwd)[1:], min(bwd)[1:]
        m.FWD_ELEMS, m.FWD_WARPS = best[name][0]
        m.BWD_ELEMS, m.BWD_WARPS, m.BWD_STAGES, m.BWD_PROGRAMS_PER_SM, m.BWD_MIN_STRIP = best[name][1]
        for label, fn in (("unfused_compiled", compiled),
                          ("fused", lambda x, nw, w: m.norm_canon(x, nw, w, None, 1e-5, False, True, torch.bfloat16))):
            xg, nwg, wg = (v.clone().requires_grad_() for v in (x, nw, w))
            step = lambda: fn(xg, nwg, wg).backward(dy)  # noqa: E731
            for _ in range(3):
                step()
            print(json.dumps({"shape": name, "what": label, "device_us": round(_device_seconds(step, 20) * 1e6, 1),
                              "floor_us": round((floor["fwd"] + floor["bwd"]) / 4.8e6, 1)}), flush=True)
    # one setting for both shapes: each shape's best forward / backward, the 12L768D one where they differ
    (fe, fw), (be, bw, bs, bp, bm) = best["12L768D"]
    print(f"m.FWD_ELEMS={fe};m.FWD_WARPS={fw};m.BWD_ELEMS={be};m.BWD_WARPS={bw};m.BWD_STAGES={bs};"
          f"m.BWD_PROGRAMS_PER_SM={bp};m.BWD_MIN_STRIP={bm}".replace("m.", "playground.kernels.norm_canon_triton."),
          flush=True)


if __name__ == "__main__":
    main()

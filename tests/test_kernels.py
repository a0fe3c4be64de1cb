"""Fast kernels against their plain PyTorch references (outputs and gradients). On a GPU they
run natively (``-m gpu``); where triton is installed without a GPU, the Triton interpreter runs
them on the CPU (slow, so tiny shapes). Triton 3.6.0's interpreter needs numpy < 2.4 (with 2.4 every
kernel with a loop over a runtime bound fails: "only 0-dimensional arrays can be converted to
Python scalars"): ``pip install triton==3.6.0 'numpy<2.4'`` in a separate environment, then
``pytest tests/test_kernels.py -k interpreter``."""

from __future__ import annotations

import collections
import importlib.util
import itertools
import os
import re
import subprocess
import sys
import tempfile

import pytest
import torch

from playground.layers.canon import CanonConfig, causal_conv
from playground.layers.norms import rms_scale

HAS_TRITON = importlib.util.find_spec("triton") is not None
# (B, T, C, K) × act × residual × bias: T and C not multiples of the blocks, B = 1, K = 1..4
CASES = list(itertools.product([(2, 70, 130, 4), (1, 45, 7, 2), (1, 5, 7, 3), (2, 33, 64, 1)],
                               [False, True], [True, False], [False, True]))


def reference(x, w, b, act, residual):
    z = causal_conv(x, w, b)
    z = torch.nn.functional.silu(z) if act else z
    return x + z if residual else z


def assert_same(op, ref, inputs, gy, tol):
    """op(*inputs) and its gradients equal ref on fp32 copies of the inputs."""
    got = (op(*inputs),)
    got += torch.autograd.grad(got[0], inputs, gy)
    ref_in = [v.detach().float().requires_grad_() for v in inputs]
    want = (ref(*ref_in),)
    want += torch.autograd.grad(want[0], ref_in, gy.float())
    for a, e in zip(got, want):
        torch.testing.assert_close(a.float(), e, rtol=tol,
                                   atol=tol * max(1.0, e.abs().max().item()))


def compare_canon_op(op, ref, device, dtype, b_, t, c, k, seed, grad_shape, act, residual,
                     bias, tol, strided_grad=False):
    """op(x, w, bias, act, residual) — a Canon layer and what reads it — and its gradients against
    ref on random x [B, T, C], taps, bias and upstream gradient drawn from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b_, t, c, generator=g).to(device, dtype).requires_grad_()
    w = (torch.rand(c, k, generator=g) - 0.5).to(device).requires_grad_()
    b = torch.randn(c, generator=g).to(device).requires_grad_() if bias else None
    gy = torch.randn(*grad_shape, generator=g).to(device, dtype)
    if strided_grad:
        gy = gy.transpose(0, 1).contiguous().transpose(0, 1)  # a non-contiguous upstream gradient
    inputs = [x, w] + ([b] if bias else [])
    assert_same(lambda *v: op(v[0], v[1], v[2] if bias else None, act, residual),
                lambda *v: ref(v[0], v[1], v[2] if bias else None, act, residual), inputs, gy, tol)


def compare(op, device, dtype, shape, act, residual, bias, tol):
    b_, t, c, k = shape
    compare_canon_op(op, reference, device, dtype, b_, t, c, k, sum(shape), (b_, t, c), act,
                     residual, bias, tol, strided_grad=True)


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
@pytest.mark.parametrize("chunks", [3, 10**6], ids=["strips_of_3_chunks", "whole_sequences"])
def test_canon_triton_interpreter_matches_reference(chunks):
    """y, dx, dw and db in fp32 for every case, the backward's sequences cut into strips of
    ``chunks`` chunks, the last may be shorter (the interpreter counts as a GPU of 132 SMs, so
    tiny shapes split as far as BWD_MIN_STRIP lets them)."""
    run_interpreted("from playground.kernels import canon_triton as m\n"
                    f"m.BWD_MIN_STRIP = {chunks} * m.BWD_BLOCK_T\n"
                    "assert m._strips(1, 70, 7, torch.device('cpu'))[1] == m.BWD_MIN_STRIP\n"
                    "for shape, act, res, bias in t.CASES:\n"
                    "    t.compare(m.canon_conv, 'cpu', torch.float32, shape, act, res, "
                    "bias, 1e-5)\n")


# Canon-D fused with SwiGLU: (B, T, 2H, K), the same variants
GLU_CASES = list(itertools.product([(2, 70, 2 * 65, 4), (1, 45, 2 * 7, 2), (1, 5, 2 * 3, 3),
                                    (2, 33, 2 * 64, 1)],
                                   [False, True], [True, False], [False, True]))


def glu_reference(u, w, b, act, residual):
    gate, up = reference(u, w, b, act, residual).chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up


def compare_glu(op, device, dtype, shape, act, residual, bias, tol):
    b_, t, c, k = shape
    compare_canon_op(op, glu_reference, device, dtype, b_, t, c, k, sum(shape) + 1,
                     (b_, t, c // 2), act, residual, bias, tol)


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
@pytest.mark.parametrize("chunks", [3, 10**6], ids=["strips_of_3_chunks", "whole_sequences"])
def test_canon_glu_interpreter_matches_reference(chunks):
    """Canon-D fused with SwiGLU: h, du, dw and db in fp32 against Canon then silu(gate)·up."""
    run_interpreted("from playground.kernels import canon_triton as m\n"
                    f"m.BWD_MIN_STRIP = {chunks} * m.BWD_BLOCK_T\n"
                    "for shape, act, res, bias in t.GLU_CASES:\n"
                    "    t.compare_glu(m.canon_glu, 'cpu', torch.float32, shape, act, res, "
                    "bias, 1e-5)\n")


# Canon-B fused with the q/k/v split and RoPE: (B, T, heads, head_dim, K, rotated dims, rotated
# heads): full RoPE; a head width that is not a power of two; lane groups narrower than their
# power-of-two blocks (3 pairs in 4 lanes, 14 dims in 16); NoPE
ROPE_CASES = list(itertools.product([(2, 37, 2, 16, 4, 16, 2), (1, 21, 4, 12, 3, 4, 2),
                                     (1, 23, 2, 20, 4, 6, 1), (2, 19, 2, 8, 2, 0, 0)],
                                    [False, True], [True, False], [False, True]))


def rope_reference(u, w, b, act, residual, inv_freq, n_heads, rot_heads):
    """Canon, then q/k/v heads [3, B, H, T, hd], then GPT-NeoX RoPE (x1 cos − x2 sin, x2 cos + x1
    sin on the first r dims) on the first ``rot_heads`` heads of q and k."""
    y = reference(u, w, b, act, residual)
    bsz, t, c = y.shape
    hd, half = c // (3 * n_heads), inv_freq.numel()
    qkv = y.view(bsz, t, 3, n_heads, hd).permute(2, 0, 3, 1, 4)
    angle = torch.arange(t, device=u.device, dtype=torch.float32)[:, None] * inv_freq[None, :]
    cos, sin = angle.cos(), angle.sin()
    out = []
    for sec in range(3):
        heads = []
        for h in range(n_heads):
            x = qkv[sec, :, h]
            if sec < 2 and h < rot_heads and half:
                x1, x2, rest = x[..., :half], x[..., half : 2 * half], x[..., 2 * half :]
                x = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], dim=-1)
            heads.append(x)
        out.append(torch.stack(heads, 1))
    return torch.stack(out)


def compare_rope(op, device, dtype, case, act, residual, bias, tol):
    b_, t, nh, hd, k, r, rh = case
    inv_freq = ((10000.0 ** (-torch.arange(r // 2, dtype=torch.float64) / max(r // 2, 1))).float()
                .to(device))
    angle = torch.arange(t, device=device, dtype=torch.float32)[:, None] * inv_freq[None, :]
    cos, sin = angle.cos(), angle.sin()
    compare_canon_op(lambda u, w, b, a, res: op(u, w, b, cos, sin, a, res, nh, rh),
                     lambda u, w, b, a, res: rope_reference(u, w, b, a, res, inv_freq, nh, rh),
                     device, dtype, b_, t, 3 * nh * hd, k, sum(case) + 2, (3, b_, nh, t, hd), act,
                     residual, bias, tol)


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
@pytest.mark.parametrize("chunks", [3, 10**6], ids=["strips_of_3_chunks", "whole_sequences"])
def test_canon_rope_interpreter_matches_reference(chunks):
    """Canon-B fused with the head split and RoPE (full, a quarter of the dims on half the heads,
    none; a head width that is not a power of two): out, du, dw, db in fp32."""
    run_interpreted("from playground.kernels import canon_triton as m\n"
                    f"m.BWD_MIN_STRIP = {chunks} * m.BWD_BLOCK_T\n"
                    "for case, act, res, bias in t.ROPE_CASES:\n"
                    "    t.compare_rope(m.canon_rope, 'cpu', torch.float32, case, act, res, "
                    "bias, 1e-5)\n")


# Canon-A/C fused with the RMSNorm before it: the Canon cases, the residual stream in fp32 (as
# under autocast) or in the activations' dtype, the output in either
def norm_canon_reference(x, nw, w, b, act, residual, eps=1e-5):
    return reference(torch.nn.functional.rms_norm(x, (x.shape[-1],), nw, eps), w, b, act, residual)


def compare_norm_canon(op, device, dtype, shape, act, residual, bias, tol, out_dtype=None, seed=0):
    """``op`` (:func:`playground.kernels.norm_canon_triton.norm_canon`, given the norm's scale as
    the layer computes it) and its gradients (x — also through that scale —, the norm's weight,
    taps, bias) against RMSNorm then Canon, on rows of unequal scale, a norm weight away from 1,
    output in ``out_dtype`` (default: x's)."""
    b_, t, c, k = shape
    g = torch.Generator().manual_seed(seed + sum(shape))
    x = (torch.randn(b_, t, c, generator=g) * torch.rand(b_, t, 1, generator=g)
         * 4).to(device, dtype).requires_grad_()
    nw = (1 + torch.randn(c, generator=g) / 2).to(device).requires_grad_()
    w = (torch.rand(c, k, generator=g) - 0.5).to(device).requires_grad_()
    bb = torch.randn(c, generator=g).to(device).requires_grad_() if bias else None
    gy = torch.randn(b_, t, c, generator=g).to(device, out_dtype or dtype)
    inputs = [x, nw, w] + ([bb] if bias else [])
    assert_same(lambda *v: op(v[0], rms_scale(v[0], 1e-5), v[1], v[2], v[3] if bias else None, act,
                              residual, out_dtype or dtype),
                lambda *v: norm_canon_reference(v[0], v[1], v[2], v[3] if bias else None,
                                                act, residual),
                inputs, gy, tol)


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
@pytest.mark.parametrize("chunks", [3, 10**6], ids=["strips_of_3_chunks", "whole_sequences"])
def test_norm_canon_interpreter_matches_reference(chunks):
    """y, dx, the norm weight's, taps' and bias's gradients in fp32 for every Canon case, the
    backward's sequences cut into strips of ``chunks`` chunks (as the plain kernel's test)."""
    run_interpreted("from playground.kernels import canon_triton as c, norm_canon_triton as m\n"
                    f"c.BWD_MIN_STRIP = {chunks} * c.BWD_BLOCK_T\n"
                    "for shape, act, res, bias in t.CASES:\n"
                    "    t.compare_norm_canon(m.norm_canon, 'cpu', torch.float32, shape, act, res, "
                    "bias, 1e-5)\n")


def fused_reads_match_torch():
    """Attention with Canon-B (full, quarter, half-heads RoPE, NoPE), the SwiGLU MLP with Canon-D
    and a whole block (Canon-A and C with their norms), their fused kernels forced onto the CPU,
    against backend=torch: output and every gradient. (The wiring: head layout, RoPE tables,
    rotated heads, which norm feeds which Canon layer.)"""
    from playground.config import ModelConfig
    from playground.kernels import canon_triton, norm_canon_triton
    from playground.layers import canon
    from playground.layers.mlp import MLP
    from playground.mixers.attention import Attention, AttentionConfig
    from playground.model import Block

    canon.pick_kernel = lambda cfg, x, find, fusion=None: None if cfg.backend == "torch" else find()
    canon.canon_rope_kernel = lambda: canon_triton.canon_rope
    canon.canon_glu_kernel = lambda: canon_triton.canon_glu
    canon.canon_kernel = lambda: canon_triton.canon_conv
    canon.norm_canon_kernel = lambda: norm_canon_triton.norm_canon
    x = torch.randn(2, 21, 48, requires_grad=True)
    block = lambda cc: Block(ModelConfig(d_model=48, head_dim=12,  # noqa: E731
                                         mixer=AttentionConfig(), canon=cc))
    for make in ([lambda cc, f=f, h=h:
                  Attention(48, 12, AttentionConfig(rope_fraction=f, rope_heads=h), cc)
                  for f, h in [(1.0, 1.0), (0.34, 1.0), (1.0, 0.5), (0.0, 1.0)]]
                 + [lambda cc: MLP(48, "swiglu", cc), block]):
        outs = []
        for backend in ("fused", "torch"):
            torch.manual_seed(0)
            layer = make(CanonConfig(positions="ABCD", backend=backend,
                                     activation="silu", bias=True))
            y = layer(x)
            outs.append([y, *torch.autograd.grad(y.square().sum(), [x, *layer.parameters()])])
        for a, b in zip(*outs):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def mamba2_on_mamba_ssm_matches_torch():
    """The Mamba2 mixer on mamba_ssm's SSD against the PyTorch path: output and every gradient,
    fp32; then the SSD adapter alone with isolated
    packed examples, every input's gradient, with x, B and C contiguous and as column slices of
    one tensor (as Mamba2 passes them), eager and compiled whole; then ``torch.library.opcheck`` of
    its custom op. Run
    under the interpreter on the CPU: the CUDA-only calls of mamba_ssm's wrappers stubbed, the
    backend choice let through, autotuning cut to one configuration (nothing to time)."""
    import contextlib
    import types

    from playground.kernels import adapters as fast
    from playground.mixers.mamba2 import Mamba2, Mamba2Config

    torch.cuda.device = lambda index: contextlib.nullcontext()
    torch.cuda.get_device_properties = lambda device: types.SimpleNamespace(multi_processor_count=4)
    assert fast.available("mamba_ssm")
    fast.TUNED.clear()  # one configuration per kernel: nothing to time
    fast.restrict_autotune("mamba_ssm", "interpreter", keep=1)
    fast.pick_backend = (lambda requested, on_cuda, stateful, order:
                         "torch" if stateful else requested)
    x = torch.randn(2, 40, 32, generator=torch.Generator().manual_seed(0), requires_grad=True)
    outs, weights = [], None
    for backend in ("torch", "mamba_ssm"):
        cfg = Mamba2Config(heads=2, state=16, chunk=16, backend=backend)
        mixer = Mamba2(32, 16, cfg, CanonConfig(positions=""))
        if weights is None:
            with torch.no_grad():  # D away from 1, so that a lost or doubled skip shows
                mixer.D.copy_(torch.tensor([0.5, -1.5]))
            weights = mixer.state_dict()
        mixer.load_state_dict(weights)
        y = mixer(x)
        outs.append([y, *torch.autograd.grad(y.square().sum(), [x, *mixer.parameters()])])
    for got in outs[1:]:
        for a, b in zip(got, outs[0]):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    # the SSD adapter alone, with isolated packed examples (seq_idx): every gradient
    from playground.mixers import scan

    g = torch.Generator().manual_seed(1)
    inputs = [torch.randn(2, 40, 2, 16, generator=g), 0.1 * torch.rand(2, 40, 2, generator=g),
              -torch.rand(2, generator=g),
              torch.randn(2, 40, 16, generator=g), torch.randn(2, 40, 16, generator=g)]
    inputs = [v.requires_grad_() for v in inputs]
    # x, B, C as slices of one tensor (as in Mamba2)
    wide = torch.randn(2, 40, 80, generator=g, requires_grad=True)
    sliced = [wide[..., :32].unflatten(-1, (2, 16)), inputs[1], inputs[2], wide[..., 32:48],
              wide[..., 64:]]
    resets = torch.zeros(2, 40, dtype=torch.bool)
    resets[0, 13] = resets[1, 29] = True
    # traced whole (fullgraph: a graph break fails) with its fake shapes and autograd formula
    traced = torch.compile(lambda *v: fast.ssd_mamba(*v, 16, "restricted", resets),
                           backend="aot_eager", fullgraph=True)
    for args in (inputs, sliced):
        ref = scan.ssd_chunked(*args, 16, resets=resets)[0]
        dout = torch.randn(ref.shape, generator=g)
        want = [ref, *torch.autograd.grad(ref, args, dout)]
        for op in (lambda *v: fast.ssd_mamba(*v, 16, "restricted", resets), traced):
            got = op(*args)
            for a, b in zip([got, *torch.autograd.grad(got, args, dout)], want):
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    # the custom op's schema, fake and autograd registrations against its real outputs
    seq_idx = resets.int().cumsum(1, dtype=torch.int32)
    torch.library.opcheck(fast.mamba_ssd, (inputs[0], inputs[1], inputs[2], inputs[3][:, :, None],
                                           inputs[4][:, :, None], 16, seq_idx))


@pytest.mark.skipif(not HAS_TRITON or importlib.util.find_spec("mamba_ssm") is None,
                    reason="needs triton and mamba_ssm")
def test_mamba2_on_mamba_ssm_kernels_interpreter():
    run_interpreted("t.mamba2_on_mamba_ssm_matches_torch()\n")


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
def test_fused_reads_in_attention_and_mlp_interpreter():
    run_interpreted("t.fused_reads_match_torch()\n")


INT_ARGS = {"T", "C", "H", "NH", "SPLITS", "STRIP", "ROT_HEADS", "B"}
FP32_ARGS = {"W", "Bias", "DW", "DB", "Cos", "Sin"}


def hopper_usage(fn, constexprs: dict, warps: int,
                 fp32: tuple[str, ...] = ()) -> collections.Counter:
    """Compile a Canon kernel for sm_90 (bf16 activations, fp32 taps) without a GPU, specialised
    as a launch specialises it (pointers 16-byte aligned, T, C and H multiples of 16), and read
    its resources (registers, spilled bytes) off the cubin with the cuobjdump that triton ships
    (``fp32``: pointer arguments of fp32 activations, e.g. the residual stream under autocast),
    and how many global loads and stores of each width its machine code has (``LDG.E.128``: 16
    bytes at once; ``LDG.E.U16``: one bf16; ``LDGSTS``: an asynchronous copy to shared memory)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = {p.name: "constexpr" if p.is_constexpr else "i32" if p.name in INT_ARGS
           else "*fp32" if p.name in FP32_ARGS or p.name in fp32 else "*bf16" for p in fn.params}
    attrs = {(i,): [["tt.divisibility", 16]] for i, p in enumerate(fn.params)
             if not p.is_constexpr and (sig[p.name].startswith("*") or p.name in ("T", "C", "H"))}
    kernel = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs),
                            target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(kernel.asm["cubin"])
        f.flush()
        tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin",
                            "cuobjdump")
        res = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True,
                             text=True).stdout
        sass = subprocess.run([tool, "--dump-sass", f.name], capture_output=True, text=True).stdout
    # 0 for one not there
    usage = collections.Counter(re.findall(r"\b((?:LDG|STG)\.E[.\w]*|LDGSTS)", sass))
    usage.update({k: int(v) for k, v in re.findall(r"(REG|STACK|LOCAL):(\d+)", res)})
    return usage


# The rope kernels' lane blocks at head width 64: full RoPE, a quarter of the dims, NoPE
ROPE_HOPPER_BLOCKS = [{"HD": 64, "ROT": 64, "BH": 32, "BR": 1},
                      {"HD": 64, "ROT": 16, "BH": 8, "BR": 64},
                      {"HD": 64, "ROT": 0, "BH": 1, "BR": 64}]


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
def test_canon_kernels_compile_for_hopper_without_spills():
    """Every Canon kernel variant compiles for sm_90 at its pinned launch shape with no spill to
    local memory (no GPU needed: a kernel change is checked before device time is spent)."""
    from playground.kernels import canon_triton as m

    fwd = {"BT": m.BLOCK_T, "BC": m.BLOCK_C}
    bwd = {"BT": m.BWD_BLOCK_T, "BC": m.BWD_BLOCK_C, "STAGES": m.BWD_STAGES}
    kernels = [(m._fwd_kernel, fwd, m.FWD_WARPS), (m._bwd_kernel, bwd, m.BWD_WARPS),
               (m._glu_fwd_kernel, {"BT": m.GLU_BLOCK_T, "BC": m.GLU_BLOCK_C}, m.GLU_FWD_WARPS),
               (m._glu_bwd_kernel, {**bwd, "BC": m.GLU_BWD_BLOCK_C, "STAGES": m.FUSED_BWD_STAGES},
                m.BWD_WARPS),
               *[(m._rope_fwd_kernel, {"BT": m.ROPE_BLOCK_T, **rope}, m.ROPE_FWD_WARPS)
                 for rope in ROPE_HOPPER_BLOCKS],
               *[(m._rope_bwd_kernel, {"BT": m.BWD_BLOCK_T, "STAGES": m.FUSED_BWD_STAGES, **rope},
                  m.BWD_WARPS)
                 for rope in ROPE_HOPPER_BLOCKS]]
    for (fn, shape, warps), (act, residual, bias) in itertools.product(
            kernels, [(False, True, False), (True, False, True)]):
        usage = hopper_usage(fn, {"K": 4, "HAS_BIAS": bias, "ACT": act, "RESIDUAL": residual,
                                  **shape}, warps)
        print(fn.__name__, act, residual, bias, shape, usage)
        assert (usage["REG"] <= 255 and usage["LOCAL"] == 0
                and usage["STACK"] == 0), (fn.__name__, usage)


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
def test_norm_canon_kernels_compile_for_hopper_without_spills():
    """Canon-A/C fused with RMSNorm at the plain kernels' tiles, the residual stream and its
    gradient in fp32: no spill on sm_90."""
    from playground.kernels import canon_triton as ct
    from playground.kernels import norm_canon_triton as m

    kernels = [(m._fwd_kernel, {"BT": m.BLOCK_T, "BC": m.BLOCK_C}, m.FWD_WARPS),
               (m._bwd_kernel, {"BT": ct.BWD_BLOCK_T, "BC": ct.BWD_BLOCK_C, "STAGES": m.BWD_STAGES},
                ct.BWD_WARPS)]
    for (fn, shape, warps), (act, residual, bias) in itertools.product(
            kernels, [(False, True, False), (True, False, True)]):
        usage = hopper_usage(fn,
                             {"K": 4, "HAS_BIAS": bias, "ACT": act, "RESIDUAL": residual, **shape},
                             warps, fp32=("X", "R", "G", "DX", "DR", "DG"))
        print(fn.__name__, act, residual, bias, shape, usage)
        assert (usage["REG"] <= 255 and usage["LOCAL"] == 0
                and usage["STACK"] == 0), (fn.__name__, usage)


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
def test_canon_forward_kernels_read_and_write_whole_vectors():
    """The forward kernels move activations 16 bytes at a time, also the Canon-B + RoPE one for
    full RoPE and NoPE: no global load or store of a single bf16 (a RoPE kernel that reads its
    partner lanes through a computed index shows 64 such loads per thread)."""
    from playground.kernels import canon_triton as m

    for fn, shape, warps in [(m._fwd_kernel, {"BT": m.BLOCK_T, "BC": m.BLOCK_C}, m.FWD_WARPS),
                             (m._glu_fwd_kernel, {"BT": m.GLU_BLOCK_T, "BC": m.GLU_BLOCK_C},
                              m.GLU_FWD_WARPS),
                             *[(m._rope_fwd_kernel, {"BT": m.ROPE_BLOCK_T, **rope},
                                m.ROPE_FWD_WARPS)
                               for rope in ROPE_HOPPER_BLOCKS if rope["ROT"] in (0, rope["HD"])]]:
        usage = hopper_usage(fn, {"K": 4, "HAS_BIAS": False, "ACT": False, "RESIDUAL": True,
                                  **shape}, warps)
        print(fn.__name__, shape, usage)
        assert usage["LDG.E.128"] > 0 and usage["STG.E.128"] > 0, (fn.__name__, shape, usage)
        assert usage["LDG.E.U16"] == 0 and usage["STG.E.U16"] == 0, (fn.__name__, shape, usage)


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
def test_strip_backwards_pipeline_their_loads_when_asked():
    """More than 1 pipeline stage (``BWD_STAGES``, ``FUSED_BWD_STAGES``) makes the strip loop of
    every backward kernel copy its rows asynchronously (LDGSTS) with no spill, and 1 keeps plain
    loads — the knob does what it says (its speed is measured on a GPU, docs/PERFORMANCE.md)."""
    from playground.kernels import canon_triton as m

    kernels = [(m._bwd_kernel, {"BC": m.BWD_BLOCK_C}),
               (m._glu_bwd_kernel, {"BC": m.GLU_BWD_BLOCK_C}),
               (m._rope_bwd_kernel, ROPE_HOPPER_BLOCKS[0])]
    for (fn, shape), stages in itertools.product(kernels, (1, 3)):
        usage = hopper_usage(fn, {"K": 4, "HAS_BIAS": False, "ACT": False, "RESIDUAL": True,
                                  "BT": m.BWD_BLOCK_T, "STAGES": stages, **shape}, m.BWD_WARPS)
        print(fn.__name__, stages, usage)
        assert usage["LOCAL"] == 0 and usage["STACK"] == 0, (fn.__name__, stages, usage)
        assert (usage["LDGSTS"] > 0) == (stages > 1), (fn.__name__, stages, usage)


def run_interpreted(code: str) -> None:
    """Runs ``code`` (with ``torch`` and this module as ``t``) in a subprocess under Triton's CPU
    interpreter: TRITON_INTERPRET must be set before triton is imported."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", "import torch, test_kernels as t\n" + code],
                          cwd=os.path.dirname(__file__), env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]



@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("width", [512, 768, 1536, 2304, 1344 * 2, 2048 * 2])  # d, 3d, 2·ff
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("act,residual,bias", [(False, True, False), (True, False, True)])
def test_canon_triton_gpu_matches_reference(width, dtype, act, residual, bias):
    from playground.kernels import canon_kernel

    op = canon_kernel()
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    compare(op, "cuda", dtype, (2, 2048, width, 4), act, residual, bias, tol)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
# SwiGLU's 2·ff at d = 512, 768; a ragged one
@pytest.mark.parametrize("width", [2 * 1344, 2 * 2048, 2 * 100])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("act,residual,bias", [(False, True, False), (True, False, True)])
def test_canon_glu_gpu_matches_reference(width, dtype, act, residual, bias):
    from playground.kernels import canon_glu_kernel

    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    compare_glu(canon_glu_kernel(), "cuda", dtype, (2, 2048, width, 4), act, residual, bias, tol)
    compare_glu(canon_glu_kernel(), "cuda", dtype, (1, 77, width, 4), act, residual, bias, tol)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("width", [512, 768, 1000])  # d at the paper's sizes; a ragged one
@pytest.mark.parametrize("dtype,out_dtype", [(torch.float32, torch.bfloat16),
                                             (torch.bfloat16, torch.bfloat16),
                                             (torch.float32, torch.float32)],
                         ids=["autocast", "bf16", "fp32"])
@pytest.mark.parametrize("act,residual,bias", [(False, True, False), (True, False, True)])
def test_norm_canon_gpu_matches_reference(width, dtype, out_dtype, act, residual, bias):
    """Canon-A/C with its RMSNorm; "autocast": the fp32 residual stream in, bf16 out."""
    from playground.kernels import norm_canon_kernel

    tol = 2e-2 if torch.bfloat16 in (dtype, out_dtype) else 1e-4
    for shape in [(2, 2048, width, 4), (1, 77, width, 4), (3, 1, width, 4)]:
        compare_norm_canon(norm_canon_kernel(), "cuda", dtype, shape, act, residual, bias,
                           tol, out_dtype)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_block_with_fused_canon_compiles_whole_under_autocast():
    """A block with Canon-ABCD on its fused kernels (Canon-A/C with the norm reads the autocast
    dtype) compiles as one graph under bf16 autocast, and equals the eager block."""
    from playground.config import ModelConfig
    from playground.mixers.attention import AttentionConfig
    from playground.model import Block

    torch.manual_seed(0)
    block = Block(ModelConfig(d_model=256, head_dim=64, mixer=AttentionConfig(),
                              canon=CanonConfig(positions="ABCD", backend="fused")))
    block = block.cuda()
    x = torch.randn(2, 128, 256, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        want = block(x)
        got = torch.compile(block, fullgraph=True)(x)
    assert got.dtype == want.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("case", [(2, 2048, 8, 64, 4, 64, 8), (2, 2048, 12, 64, 4, 16, 12),
                                  (1, 77, 8, 64, 4, 64, 4)],
                         ids=["rope", "quarter", "half_heads_ragged_t"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("act,residual,bias", [(False, True, False), (True, False, True)])
def test_canon_rope_gpu_matches_reference(case, dtype, act, residual, bias):
    from playground.kernels import canon_rope_kernel

    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    compare_rope(canon_rope_kernel(), "cuda", dtype, case, act, residual, bias, tol)


DYN_CASES = list(itertools.product([(2, 70, 130, 4, 8), (1, 5, 7, 3, 4), (2, 33, 64, 1, 16)],
                                   [True, False]))


def dynamic_reference(x, u, w2, b, residual):
    from playground.layers.canon import dynamic_conv

    w = torch.einsum("btr,kcr->btck", u, w2) + b.T[None, None]
    return dynamic_conv(x, w) + (x if residual else 0)


def compare_dynamic(op, device, dtype, shape, residual, tol):
    b_, t, c, k, r = shape
    g = torch.Generator().manual_seed(sum(shape))
    inputs = [torch.randn(b_, t, c, generator=g).to(device, dtype),
              torch.randn(b_, t, r, generator=g).to(device, dtype),
              (torch.randn(k, c, r, generator=g) / r).to(device),
              torch.randn(k, c, generator=g).to(device)]
    inputs = [v.requires_grad_() for v in inputs]
    gy = torch.randn(b_, t, c, generator=g).to(device, dtype)
    assert_same(lambda *v: op(*v, residual), lambda *v: dynamic_reference(*v, residual),
                inputs, gy, tol)


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
def test_dynamic_canon_triton_interpreter_matches_reference():
    run_interpreted("from playground.kernels.dynamic_canon_triton import dynamic_canon\n"
                    "for shape, res in t.DYN_CASES:\n"
                    "    t.compare_dynamic(dynamic_canon, 'cpu', torch.float32, "
                    "shape, res, 1e-4)\n")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("width", [768, 2304, 4096])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dynamic_canon_triton_gpu_matches_reference(width, dtype):
    from playground.kernels import dynamic_canon_kernel

    tol = 3e-2 if dtype == torch.bfloat16 else 1e-4
    compare_dynamic(dynamic_canon_kernel(), "cuda", dtype, (2, 2048, width, 4, 8), True, tol)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_canon_triton_compiles_without_graph_breaks():
    from playground.kernels import canon_glu_kernel, canon_kernel

    op, glu = canon_kernel(), canon_glu_kernel()
    fn = torch.compile(lambda x, w: op(x, w, None, False, True) * 2, fullgraph=True)
    x = torch.randn(2, 64, 256, device="cuda")
    w = torch.randn(256, 4, device="cuda")
    torch.testing.assert_close(fn(x, w), 2 * reference(x, w, None, False, True),
                               rtol=1e-4, atol=1e-4)
    fn = torch.compile(lambda x, w: glu(x, w, None, False, True) * 2, fullgraph=True)
    torch.testing.assert_close(fn(x, w), 2 * glu_reference(x, w, None, False, True),
                               rtol=1e-4, atol=1e-4)
    from playground.kernels import canon_rope_kernel

    x, w = torch.randn(2, 64, 3 * 128, device="cuda"), torch.randn(3 * 128, 4, device="cuda")
    inv_freq = torch.rand(16, device="cuda")
    angle = torch.arange(64, device="cuda")[:, None] * inv_freq[None, :]
    fn = torch.compile(lambda x, w: canon_rope_kernel()(x, w, None, angle.cos(), angle.sin(), False,
                                                        True, 4, 4) * 2,
                       fullgraph=True)
    torch.testing.assert_close(
        fn(x, w), 2 * rope_reference(x, w, None, False, True, inv_freq, 4, 4), rtol=1e-4, atol=1e-4)


def test_canon_backends_on_the_cpu():
    """On the CPU every backend but ``triton``, ``fused``, ``causal_conv1d`` and ``fla`` (which need
    CUDA and say so) is the PyTorch reference: the same logits from the same weights; an unknown
    backend, and causal_conv1d or fla with a kernel or dynamic filters they do not do, are refused
    by name."""
    from playground.config import ModelConfig
    from playground.errors import ConfigError
    from playground.layers.canon import CanonConfig
    from playground.mixers.attention import AttentionConfig
    from playground.model import build_model

    ids = torch.randint(0, 20, (2, 12), generator=torch.Generator().manual_seed(0))
    logits = []
    for backend in ("auto", "torch", "triton", "fused", "causal_conv1d", "fla"):
        cfg = ModelConfig(n_layers=1, d_model=32, head_dim=16, mixer=AttentionConfig(),
                          canon=CanonConfig(positions="ABCD", backend=backend))
        model = build_model(cfg, 20, seed=0)
        if backend in ("triton", "fused", "causal_conv1d", "fla"):
            with pytest.raises(RuntimeError, match=f"backend={backend} needs .* CUDA device"):
                model(ids)
        else:
            logits.append(model(ids))
    assert all(torch.equal(x, logits[0]) for x in logits)
    with pytest.raises(ConfigError, match="model.canon.backend"):
        CanonConfig(backend="unfused")
    with pytest.raises(ConfigError, match="model.canon.kernel=5 .*causal_conv1d"):
        CanonConfig(backend="causal_conv1d", kernel=5)
    with pytest.raises(ConfigError, match="model.canon.dynamic='lowrank' .*static"):
        CanonConfig(backend="causal_conv1d", dynamic="lowrank")
    with pytest.raises(ConfigError, match="model.canon.dynamic='headwise' .*backend=fla"):
        CanonConfig(backend="fla", dynamic="headwise")


def test_each_backend_runs_the_fusions_it_names(monkeypatch):
    """Which kernel each backend picks on CUDA: auto fuses Canon-B with the head split and RoPE
    only where RoPE turns every dim of every head (the measured win) and Canon-A/C with their
    norm, fused every fusion (also
    partial RoPE, NoPE and Canon-D + SwiGLU), triton none; torch never a kernel. Attention asks for
    the whole-head fusion exactly when its rotation covers whole heads."""
    from types import SimpleNamespace

    from playground.layers import canon
    from playground.layers.canon import CanonConfig
    from playground.mixers.attention import Attention, AttentionConfig

    cuda = SimpleNamespace(is_cuda=True)
    picked = {b: {f: canon.pick_kernel(CanonConfig(backend=b), cuda, lambda: "kernel", f)
                     is not None for f in (None, "rope", "rope_partial", "glu", "norm")}
              for b in ("auto", "triton", "fused", "torch")}
    assert picked == {"auto": {None: True, "rope": True, "rope_partial": False, "glu": False,
                               "norm": True},
                      "triton": {None: True, "rope": False, "rope_partial": False, "glu": False,
                                 "norm": False},
                      "fused": {None: True, "rope": True, "rope_partial": True, "glu": True,
                                "norm": True},
                      "torch": {None: False, "rope": False, "rope_partial": False, "glu": False,
                                "norm": False}}
    asked = []
    monkeypatch.setattr(canon, "pick_kernel",
                        lambda cfg, x, find, fusion=None: asked.append(fusion))
    for fraction, heads in [(1.0, 1.0), (0.25, 1.0), (1.0, 0.5), (0.0, 1.0)]:
        att = Attention(64, 16, AttentionConfig(rope_fraction=fraction, rope_heads=heads),
                        CanonConfig(positions="B"))
        assert att.canon_b.rope_heads(torch.zeros(1, 5, 192), att.rotary, att.n_heads) is None
    assert asked == ["rope", "rope_partial", "rope_partial", "rope_partial"]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.skipif(importlib.util.find_spec("causal_conv1d") is None,
                    reason="causal-conv1d is not installed")
@pytest.mark.parametrize("width", [512, 1536, 2 * 1344])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("act,residual,bias", [(False, True, False), (True, False, True)])
def test_causal_conv1d_backend_matches_reference(width, dtype, act, residual, bias):
    """``model.canon.backend=causal_conv1d``: y, dx, dw, db against the reference."""
    from playground.kernels import causal_conv1d_kernel

    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    compare(causal_conv1d_kernel(), "cuda", dtype, (2, 2048, width, 4), act, residual, bias, tol)
    compare(causal_conv1d_kernel(), "cuda", dtype, (1, 77, width, 3), act, residual, bias, tol)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.skipif(importlib.util.find_spec("fla") is None, reason="fla-core is not installed")
@pytest.mark.parametrize("width", [512, 2 * 1344])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("act,residual,bias", [(False, True, False), (True, False, True)])
def test_fla_backend_matches_reference(width, dtype, act, residual, bias):
    """``model.canon.backend=fla`` (fla's ShortConvolution kernel): y, dx, dw, db against the
    reference, kernels 4 and 3, a length that is no multiple of its blocks. Eight cases: fla
    autotunes every new width and kernel (6 cases of a larger grid took 150 s on an H200)."""
    from playground.kernels import fla_canon_kernel

    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    compare(fla_canon_kernel(), "cuda", dtype, (2, 2048, width, 4), act, residual, bias, tol)
    compare(fla_canon_kernel(), "cuda", dtype, (1, 77, width, 3), act, residual, bias, tol)

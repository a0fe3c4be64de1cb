"""GPU kernels of the linear mixers against the PyTorch references (run with ``pytest -m gpu``).

Sizes are the paper's 12L768D: GLA and Gated DeltaNet with 4 heads of key width 96 and value
width 192; Mamba2 with 16 heads of width 96 and state 64; context 2048 (GDN also at lengths that
are no multiple of fla's chunk of 64, and one row). Errors are measured as the RMS of the
difference over the RMS of the reference, for outputs and for every input gradient.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F

from playground.kernels import adapters as fast
from playground.layers.canon import CanonConfig
from playground.mixers import scan
from playground.mixers.attention import AttentionConfig
from playground.mixers.gated_deltanet import GDN, GDNConfig, l2_normalize
from playground.mixers.gla import GLA, GLAConfig
from playground.mixers.mamba2 import Mamba2, Mamba2Config

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]
TOL = {torch.float32: 5e-3, torch.bfloat16: 3e-2}  # fp32 kernels use tf32 in places
TOL_MODULE = {torch.float32: 5e-3, torch.bfloat16: 5e-2}  # bf16 through a whole mixer
DTYPES = list(TOL)


def needs(package: str):
    """Skip unless ``package`` is installed (looked up without importing it at collection)."""
    return pytest.mark.skipif(importlib.util.find_spec(package) is None, reason=f"needs {package}")


def rel_err(got: torch.Tensor, ref: torch.Tensor) -> float:
    got, ref = got.float(), ref.float()
    return ((got - ref).square().mean().sqrt() / ref.square().mean().sqrt().clamp(min=1e-12)).item()


def run_with_grads(fn, inputs: list[torch.Tensor], dout: torch.Tensor):
    leaves = [z.detach().clone().requires_grad_() for z in inputs]
    out = fn(*leaves)
    out.backward(dout.to(out.dtype))
    return [out.detach(), *(z.grad for z in leaves)]


def assert_all_close(got: list, ref: list, tol: float, names: list[str]) -> None:
    errors = {n: rel_err(g, r) for n, g, r in zip(names, got, ref)}
    assert all(e < tol for e in errors.values()), errors


def gla_inputs(dtype, b=2, t=2048, h=4, k=96, v=192, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=g, device="cuda")
    gates = F.logsigmoid(rnd(b, t, h, k) * 2) / 16  # as the layer: logsigmoid(.)/16
    return [rnd(b, t, h, k).to(dtype), rnd(b, t, h, k).to(dtype), rnd(b, t, h, v).to(dtype), gates]


def packed_resets(b=2, t=2048, seed=2) -> torch.Tensor:
    """[B, T] bool: segment starts at random places (isolated packed examples)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    resets = torch.rand(b, t, generator=g, device="cuda") < 1 / 300
    resets[:, 0] = False
    return resets


@needs("fla")
@pytest.mark.parametrize("isolated", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_fla_gla_matches_reference(dtype, isolated):
    inputs = gla_inputs(dtype)
    resets = packed_resets() if isolated else None
    dout = torch.randn(inputs[2].shape, device="cuda")
    scale = 96 ** -0.5
    ref_fn = lambda q, k, v, g: scan.gla_chunked(
        *(z.float().transpose(1, 2) for z in (q, k, v, g)), scale, 16,
        resets=resets)[0].transpose(1, 2)
    ref = run_with_grads(ref_fn, inputs, dout)
    got = run_with_grads(lambda q, k, v, g: fast.gla_fla(q, k, v, g, scale, "restricted", resets),
                         inputs, dout)
    assert_all_close(got, ref, TOL[dtype], ["o", "dq", "dk", "dv", "dg"])


def ssd_inputs(dtype, b=2, t=2048, h=16, p=96, n=64, seed=1):
    g = torch.Generator(device="cuda").manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=g, device="cuda")
    dt = F.softplus(rnd(b, t, h) * 0.5 - 4.6)  # around Mamba2's initial dt range
    a = -(1 + 15 * torch.rand(h, generator=g, device="cuda"))
    return [rnd(b, t, h, p).to(dtype), dt, a, rnd(b, t, n).to(dtype), rnd(b, t, n).to(dtype)]


def _ssd_check(kernel, dtype, resets):
    inputs = ssd_inputs(dtype)
    dout = torch.randn(inputs[0].shape, device="cuda")
    ref_fn = lambda x, dt, a, bm, cm: scan.ssd_chunked(x.float(), dt, a, bm.float(), cm.float(), 64,
                                                       resets=resets)[0]
    ref = run_with_grads(ref_fn, inputs, dout)
    got = run_with_grads(kernel, inputs, dout)
    assert_all_close(got, ref, TOL[dtype], ["y", "dx", "ddt", "dA", "dB", "dC"])


@needs("fla")
@pytest.mark.skipif(not fast.fla_gated_backward_ok(), reason="fla refuses the gated backward on "
                    "Hopper with Triton < 3.7.1 (fla #640); Mamba2 then uses the PyTorch SSD")
@pytest.mark.parametrize("isolated", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_fla_simple_gla_ssd_matches_reference(dtype, isolated):
    resets = packed_resets() if isolated else None
    _ssd_check(lambda *z: fast.ssd_fla(*z, "restricted", resets), dtype, resets)


@needs("mamba_ssm")
@pytest.mark.parametrize("isolated", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_mamba_ssm_ssd_matches_reference(dtype, isolated):
    # as the mixer does before its first call: without mamba_ssm's CUDA extensions its __init__
    # fails, and available() enters the package past it (the kernel's own import would fail)
    assert fast.available("mamba_ssm"), "mamba_ssm is installed but its SSD kernel does not import"
    resets = packed_resets() if isolated else None
    _ssd_check(lambda *z: fast.ssd_mamba(*z, 64, "restricted", resets), dtype, resets)


def gdn_inputs(dtype, b=2, t=2048, h=4, k=96, v=192, seed=3):
    """As the layer makes them: unit-length q and k, g = -A·softplus(·) with A in [1, 16] and
    dt around Mamba2's initial range, beta = sigmoid(·); g and beta in float32."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=g, device="cuda")
    a = 1 + 15 * torch.rand(h, generator=g, device="cuda")
    gates = -a * F.softplus(rnd(b, t, h) * 0.5 - 4.6)
    return [l2_normalize(rnd(b, t, h, k)).to(dtype), l2_normalize(rnd(b, t, h, k)).to(dtype),
            rnd(b, t, h, v).to(dtype), gates, torch.sigmoid(rnd(b, t, h))]


GDN_SHAPES = [(2, 2048), (1, 1000), (3, 777)]  # (B, T): T = 1000 and 777 are no multiple of 64
NO_GATED_BACKWARD = pytest.mark.skipif(
    not fast.fla_gated_backward_ok(), reason="fla refuses its gated chunk backward on Hopper with "
    "Triton >= 3.4, < 3.7.1 (fla #640); GDN then trains on the PyTorch path")


def _gdn_check(dtype, shape, isolated, with_grads: bool):
    b, t = shape
    inputs = gdn_inputs(dtype, b=b, t=t)
    resets = packed_resets(b, t) if isolated else None
    scale = 96 ** -0.5
    ref_fn = lambda q, k, v, g, beta: scan.gdn_chunked(
        *(z.float().transpose(1, 2) for z in (q, k, v, g, beta)), scale, 64,
        resets=resets)[0].transpose(1, 2)
    got_fn = lambda q, k, v, g, beta: fast.gdn_fla(q, k, v, g, beta, scale, "restricted", resets)
    if not with_grads:
        with torch.no_grad():
            assert_all_close([got_fn(*inputs)], [ref_fn(*inputs)], TOL[dtype], ["o"])
        return
    dout = torch.randn(inputs[2].shape, device="cuda")
    ref = run_with_grads(ref_fn, inputs, dout)
    got = run_with_grads(got_fn, inputs, dout)
    assert_all_close(got, ref, TOL[dtype], ["o", "dq", "dk", "dv", "dg", "dbeta"])


@needs("fla")
@pytest.mark.parametrize("isolated", [False, True])
@pytest.mark.parametrize("shape", GDN_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fla_gated_delta_rule_forward_matches_reference(dtype, shape, isolated):
    """Outputs only: runs where fla refuses the gated backward, too."""
    _gdn_check(dtype, shape, isolated, with_grads=False)


@needs("fla")
@NO_GATED_BACKWARD
@pytest.mark.parametrize("isolated", [False, True])
@pytest.mark.parametrize("shape", GDN_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fla_gated_delta_rule_matches_reference_with_gradients(dtype, shape, isolated):
    _gdn_check(dtype, shape, isolated, with_grads=True)


MIXERS = {"gla": (GLAConfig, GLA), "mamba2": (Mamba2Config, Mamba2), "gdn": (GDNConfig, GDN)}


def _module_pair(kind: str, backend: str, canon: str):
    cfg_cls, cls = MIXERS[kind]
    torch.manual_seed(0)
    ref = cls(768, 64, cfg_cls(backend="torch"), CanonConfig(positions=canon)).cuda()
    fast_mod = cls(768, 64, cfg_cls(backend=backend), CanonConfig(positions=canon)).cuda()
    fast_mod.load_state_dict(ref.state_dict())
    return ref, fast_mod


@pytest.mark.parametrize("kind,backend,canon", [
    pytest.param("gla", "fla", "", marks=needs("fla")),
    pytest.param("gla", "fla", "B", marks=needs("fla")),
    pytest.param("mamba2", "fla", "", marks=[needs("fla"), pytest.mark.skipif(
        not fast.fla_gated_backward_ok(),
        reason="fla refuses the gated backward here (fla #640)")]),
    pytest.param("mamba2", "mamba_ssm", "", marks=needs("mamba_ssm")),
    pytest.param("mamba2", "mamba_ssm", "B", marks=needs("mamba_ssm")),
    pytest.param("gdn", "fla", "", marks=[needs("fla"), NO_GATED_BACKWARD]),
    pytest.param("gdn", "fla", "B", marks=[needs("fla"), NO_GATED_BACKWARD]),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_mixer_kernel_path_matches_torch_path(kind, backend, canon, dtype):
    """Whole mixers at 12L768D width: outputs, input and weight gradients, fp32 and bf16
    autocast."""
    ref, fast_mod = _module_pair(kind, backend, canon)
    x = torch.randn(2, 2048, 768, device="cuda")
    dout = torch.randn_like(x)
    results = []
    for mod in (ref, fast_mod):
        xi = x.clone().requires_grad_()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            y = mod(xi)
        y.float().backward(dout)
        results.append([y.detach(), xi.grad, *(p.grad for p in mod.parameters())])
    names = ["y", "dx", *(n for n, _ in ref.named_parameters())]
    assert_all_close(results[1], results[0], TOL_MODULE[dtype], names)


@pytest.mark.parametrize("kind", [pytest.param("gla", marks=needs("fla")),
                                  pytest.param("mamba2", marks=needs("fla")),
                                  pytest.param("gdn", marks=needs("fla"))])
def test_cached_decoding_on_cuda_matches_kernel_forward(kind):
    from playground.config import ModelConfig
    from playground.model import build_model

    mixer = MIXERS[kind][0]()
    cfg = ModelConfig(n_layers=2, d_model=256, mixer=mixer, canon=CanonConfig(positions="AB"),
                      mlp="swiglu")
    model = build_model(cfg, 50, seed=0).cuda().eval()
    ids = torch.randint(0, 50, (3, 200), device="cuda")
    with torch.no_grad():
        full = model(ids)  # the kernel path
        cache = model.new_cache()  # the PyTorch chunked/recurrent path
        steps = [model(ids[:, :150], cache)] + [model(ids[:, i : i + 1], cache)
                                                for i in range(150, 200)]
    assert rel_err(torch.cat(steps, 1), full) < TOL[torch.float32]


FIRST_STEP = textwrap.dedent("""
    import sys, time, torch
    from playground.config import ModelConfig
    from playground.mixers.gated_deltanet import GDNConfig
    from playground.mixers.gla import GLAConfig
    from playground.mixers.mamba2 import Mamba2Config
    from playground.model import build_model
    kind = sys.argv[1]
    mixer, mlp, depth = {"gla": (GLAConfig(), "swiglu", 1),
                         "mamba2": (Mamba2Config(), "none", 2),
                         "gdn": (GDNConfig(backend="fla"), "swiglu", 1)}[kind]
    cfg = ModelConfig(n_layers=12, d_model=768, mixer=mixer, mlp=mlp, depth_multiplier=depth)
    model = build_model(cfg, 112).cuda()
    ids = torch.randint(0, 112, (16, 2048), device="cuda")
    start = time.time()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(ids).logsumexp(-1).mean()
    loss.backward()
    torch.cuda.synchronize()
    print(f"FIRST_STEP_S={time.time() - start:.1f}")
""")


@pytest.mark.parametrize("kind", [pytest.param("gla", marks=needs("fla")),
                                  pytest.param("mamba2", marks=needs("fla")),
                                  pytest.param("gdn", marks=[needs("fla"), NO_GATED_BACKWARD])])
def test_first_training_step_on_a_cold_triton_cache_is_under_60s(kind, tmp_path):
    """The requirement: with an empty Triton cache (a fresh machine) the first
    forward+backward of 12L768D at batch 16 × 2048, bf16, finishes within 60 s."""
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    proc = subprocess.run([sys.executable, "-c", FIRST_STEP, kind], env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seconds = float(proc.stdout.split("FIRST_STEP_S=")[1].split()[0])
    assert seconds < 60, f"{kind}: first step took {seconds:.0f} s"


@pytest.mark.parametrize("kind", ["llama", pytest.param("gla", marks=needs("fla")),
                                  pytest.param("mamba2", marks=needs("fla"))])
def test_training_under_cuda_graphs_matches_compiled_training(kind):
    """``train.compile_mode=reduce-overhead`` (CUDA graphs; the performance table's GLA and Mamba2
    rows, and Llama + Canon-ABCD, fig7's model, whose mini step it speeds ×1.24 alone) trains as
    the plainly compiled model does: the same losses over four steps (packed documents with
    resets included) and weights after them as close as the plainly compiled model's are to eager's.
    Two correct computations of one step differ in rounding, which Adam's normalised updates carry
    into the weights: Mamba2's updates under CUDA graphs are 2.1 % off the compiled ones and those
    4.9 % off eager (mamba_ssm's atomic adds alone 0.3 % run to run; H200, 2026-12-03,
    docs/bench/2026-12-03-h200-mamba2-cudagraphs); a graph replayed on stale buffers computes
    another step, not a rounding of this one."""
    from playground.config import ModelConfig, TrainConfig
    from playground.model import build_model
    from playground.run.loop import compiled, make_optimizer, train_step

    mixer, mlp, depth, canon = {"llama": (AttentionConfig(), "swiglu", 1, "ABCD"),
                                "gla": (GLAConfig(), "swiglu", 1, "ABCD"),
                                "mamba2": (Mamba2Config(), "none", 2, "")}[kind]
    cfg = ModelConfig(n_layers=2, d_model=256, mixer=mixer, mlp=mlp, depth_multiplier=depth,
                      canon=CanonConfig(positions=canon))
    g = torch.Generator().manual_seed(0)
    batches = [(torch.randint(0, 50, (4, 512), generator=g), torch.rand(4, 512, generator=g) < 0.9,
                torch.cumsum(torch.rand(4, 512, generator=g) < 1 / 100, 1)) for _ in range(4)]
    flat = lambda model: torch.cat([p.detach().flatten().float()  # noqa: E731
                                    for p in model.parameters()])
    losses, updates = {}, {}
    for mode in ("default", "reduce-overhead", "eager"):
        t = TrainConfig(compile=mode != "eager", batch_size=4, lr=1e-3,
                        compile_mode="default" if mode == "eager" else mode)
        model = build_model(cfg, 50, seed=0).cuda()
        before, step, opt = flat(model), compiled(model, t), make_optimizer(model, t)
        losses[mode] = [train_step(step, opt, tok, mask, seg, t, torch.device("cuda"))[0].item()
                        for tok, mask, seg in batches]
        updates[mode] = flat(model) - before
        torch._dynamo.reset()
    assert losses["default"] == pytest.approx(losses["reduce-overhead"], rel=2e-3), losses
    rounding = rel_err(updates["eager"], updates["default"])
    assert rel_err(updates["reduce-overhead"], updates["default"]) < max(2e-2, rounding), rounding

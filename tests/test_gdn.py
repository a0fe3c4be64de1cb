"""Gated DeltaNet: the chunked reference equals a plain step-by-step recurrence written here
(outputs, final state and every gradient; T not a multiple of the chunk, one row and several,
with and without segment resets); the decoding form equals it too; padding neither decays nor
writes; the layer's initialisation, Canon placement, parameter count, configs and presets; a
tiny Depo run learns. (Causality, cached decoding, left padding and isolated examples of every
GDN variant are in tests/test_mixers.py's BACKBONES table.)"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from playground.config import ModelConfig, compose, to_objects
from playground.errors import ConfigError
from playground.layers.canon import CanonConfig
from playground.layers.mlp import swiglu_width
from playground.mixers import scan
from playground.mixers.attention import AttentionConfig
from playground.mixers.gated_deltanet import GDN, GDNConfig, l2_normalize
from playground.model import build_model

F64 = torch.float64
DEPO1_VOCAB = 112


@pytest.fixture(autouse=True)
def _single_thread(one_thread):
    """Every test here runs single-threaded (conftest.one_thread)."""


def gdn_inputs(seed: int, b=2, h=3, t=21, k=4, v=5, strength=1.0):
    """q, k (unit length), v: [B, H, T, ·]; g <= 0, beta in (0, 1): [B, H, T]; a state."""
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=g, dtype=F64)
    keys = F.normalize(rnd(b, h, t, k), dim=-1)
    gates = -F.softplus(rnd(b, h, t)) * strength
    beta = torch.sigmoid(rnd(b, h, t) * 2)
    return [rnd(b, h, t, k), keys, rnd(b, h, t, v), gates, beta, rnd(b, h, k, v)]


def plain_recurrence(q, k, v, g, beta, scale, s0=None, resets=None):
    """S_t = α_t (I - β_t k_t k_tᵀ) S_{t-1} + β_t k_t v_tᵀ, o_t = scale · S_tᵀ q_t, written as
    the paper writes it, one token and one row at a time (a reset drops S_{t-1})."""
    b, h, t, kd = q.shape
    eye = torch.eye(kd, dtype=q.dtype)
    outs = torch.zeros(b, h, t, v.shape[-1], dtype=q.dtype)
    finals = []
    for r in range(b):
        for head in range(h):
            s = torch.zeros(kd, v.shape[-1], dtype=q.dtype) if s0 is None else s0[r, head]
            for i in range(t):
                if resets is not None and resets[r, i]:
                    s = torch.zeros_like(s)
                kt, bt = k[r, head, i], beta[r, head, i]
                s = (g[r, head, i].exp() * (eye - bt * torch.outer(kt, kt)) @ s
                     + bt * torch.outer(kt, v[r, head, i]))
                outs[r, head, i] = scale * (s.T @ q[r, head, i])
            finals.append(s)
    return outs, torch.stack(finals).view(b, h, kd, -1)


def grads(fn, inputs):
    """Outputs, final state and the gradients of a fixed random projection of both."""
    inputs = [z.clone().requires_grad_() for z in inputs]
    out, state = fn(*inputs)
    w = torch.randn(out.shape, generator=torch.Generator().manual_seed(5), dtype=out.dtype)
    loss = (out * w).sum() + state.square().sum()
    return [out.detach(), state.detach(), *torch.autograd.grad(loss, inputs)]


def assert_all_close(got, ref, tol=1e-9):
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)


RESETS = [[0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0],
          [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]]


@pytest.mark.parametrize("b", [1, 2])
@pytest.mark.parametrize("chunk", [1, 4, 8, 64])
@pytest.mark.parametrize("isolated", [False, True])
def test_chunked_equals_plain_recurrence_with_gradients(b, chunk, isolated):
    """T = 21 is a multiple of no chunk here but 1; with resets, segments start inside chunks,
    at chunk starts (4, 8) and back to back (9, 10)."""
    inputs = [z[:b] for z in gdn_inputs(chunk + 10 * b)]
    resets = torch.tensor(RESETS[:b], dtype=torch.bool) if isolated else None
    ref = grads(lambda q, k, v, g, be, s: plain_recurrence(q, k, v, g, be, 0.6, s, resets), inputs)
    got = grads(lambda q, k, v, g, be, s:
                scan.gdn_chunked(q, k, v, g, be, 0.6, chunk, s, resets), inputs)
    assert_all_close(got, ref)


@pytest.mark.parametrize("isolated", [False, True])
def test_decoding_form_equals_plain_recurrence_with_gradients(isolated):
    inputs = gdn_inputs(3)
    resets = torch.tensor(RESETS, dtype=torch.bool) if isolated else None
    ref = grads(lambda q, k, v, g, be, s: plain_recurrence(q, k, v, g, be, 0.6, s, resets), inputs)
    got = grads(lambda q, k, v, g, be, s:
                scan.gdn_recurrent(q, k, v, g, be, 0.6, s, resets), inputs)
    assert_all_close(got, ref)


def test_segments_equal_each_example_alone():
    q, k, v, g, beta, _ = gdn_inputs(7)
    resets = torch.tensor(RESETS, dtype=torch.bool)
    packed = scan.gdn_chunked(q, k, v, g, beta, 0.5, 4, resets=resets)[0]
    starts = [0, 3, 9, 10, 19, 21]  # row 0's segments
    for lo, hi in zip(starts, starts[1:]):
        alone = scan.gdn_chunked(*(z[:1, :, lo:hi] for z in (q, k, v, g, beta)), 0.5, 4)[0]
        torch.testing.assert_close(packed[:1, :, lo:hi], alone)


def test_state_carries_over_between_calls():
    """Two calls chained through the returned state equal one call (a decoding prefill)."""
    q, k, v, g, beta, _ = gdn_inputs(4)
    whole, final = scan.gdn_chunked(q, k, v, g, beta, 0.5, 8)
    first, mid = scan.gdn_chunked(*(z[:, :, :13] for z in (q, k, v, g, beta)), 0.5, 8)
    second, end = scan.gdn_chunked(*(z[:, :, 13:] for z in (q, k, v, g, beta)), 0.5, 8, mid)
    torch.testing.assert_close(torch.cat([first, second], 2), whole)
    torch.testing.assert_close(end, final)


def test_no_decay_and_no_write_leave_the_state_alone():
    """g = 0 and beta = 0 (padding) keep the state exactly: outputs only read it."""
    q, k, v, g, beta, s0 = gdn_inputs(5, t=6)
    o, s = scan.gdn_chunked(q, k, v, torch.zeros_like(g), torch.zeros_like(beta), 0.5, 4, s0)
    torch.testing.assert_close(s, s0)
    torch.testing.assert_close(o, 0.5 * q @ s0)


def test_extreme_decay_stays_finite_and_exact():
    """Per-step log decays of -80 (far below float32's range over a chunk) in float32."""
    inputs = [z.float() for z in gdn_inputs(6)]
    inputs[3] = torch.full_like(inputs[3], -80.0)
    ref = grads(lambda q, k, v, g, be, s: scan.gdn_recurrent(q, k, v, g, be, 0.5, s), inputs)
    got = grads(lambda q, k, v, g, be, s: scan.gdn_chunked(q, k, v, g, be, 0.5, 16, s), inputs)
    for z in got:
        assert torch.isfinite(z).all()
    assert_all_close(got, ref, tol=1e-5)


def test_l2_normalize_matches_fla_convention():
    x = torch.randn(3, 5, 8, dtype=F64)
    torch.testing.assert_close(l2_normalize(x),
                               x / (x.square().sum(-1, keepdim=True) + 1e-6).sqrt())
    assert l2_normalize(torch.zeros(2, 4)).eq(0).all()  # no division by zero


def fake_fla(monkeypatch, calls: list):
    """A stand-in for ``fla.ops.gated_delta_rule`` with ``chunk_gated_delta_rule``'s signature
    (fla 0.6.0) that runs our reference per ``cu_seqlens`` sequence: checks the adapter's
    layout, dtypes, keyword names and variable-length packing without a GPU."""
    import sys
    import types

    def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None,
                               output_final_state=False, use_qk_l2norm_in_kernel=False,
                               use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                               state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None,
                               chunk_indices=None, cp_context=None, **kwargs):
        assert not kwargs and not use_qk_l2norm_in_kernel and not use_beta_sigmoid_in_kernel
        assert g.dtype == beta.dtype == torch.float32 and g.shape == beta.shape == q.shape[:3]
        calls.append(None if cu_seqlens is None else cu_seqlens.tolist())
        bounds = [0, q.shape[1]] if cu_seqlens is None else cu_seqlens.tolist()
        assert cu_seqlens is None or q.shape[0] == 1
        heads_first = lambda z, lo, hi: z[:, lo:hi].transpose(1, 2)  # [B, H, T, ·]
        o = torch.cat([scan.gdn_chunked(*(heads_first(z, lo, hi) for z in (q, k, v, g, beta)),
                                        scale, 64)[0].transpose(1, 2)
                       for lo, hi in zip(bounds, bounds[1:])], dim=1)
        return o, None

    for name in ("fla", "fla.ops"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    module = types.ModuleType("fla.ops.gated_delta_rule")
    module.chunk_gated_delta_rule = chunk_gated_delta_rule
    monkeypatch.setitem(sys.modules, "fla.ops.gated_delta_rule", module)


@pytest.mark.parametrize("isolated", [False, True])
def test_fla_adapter_passes_the_kernel_what_it_expects(monkeypatch, isolated):
    from playground.kernels import adapters as fast

    calls = []
    fake_fla(monkeypatch, calls)
    q, k, v, g, beta, _ = (z.float() for z in gdn_inputs(9))
    resets = torch.tensor(RESETS, dtype=torch.bool) if isolated else None
    rows = lambda z: z.transpose(1, 2).contiguous()  # the layer's [B, T, H, ·]
    got = fast.gdn_fla(*(rows(z) for z in (q, k, v, g, beta)), 0.5, "full", resets)
    want = scan.gdn_chunked(q, k, v, g, beta, 0.5, 4, resets=resets)[0].transpose(1, 2)
    torch.testing.assert_close(got, want)
    assert calls == [[0, 3, 9, 10, 19, 21, 38, 42] if isolated else None]


# -- the layer -------------------------------------------------------------------------------------

def layer(conv="conv1d", positions="", **kw) -> GDN:
    return GDN(64, 64, GDNConfig(conv=conv, chunk=8, **kw), CanonConfig(positions=positions))


def test_padding_neither_decays_nor_writes():
    m = layer()
    x = torch.randn(2, 6, 64)
    valid = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    from playground.layers.seq import Seq

    g, beta = m._gates(x, Seq(valid=valid))
    assert g[0, :2].eq(0).all() and beta[0, :2].eq(0).all()
    assert (g[0, 2:] < 0).all() and (beta[0, 2:] > 0).all() and (g[1] < 0).all()


def test_gates_follow_the_mamba2_parameterisation():
    m = layer()
    x = torch.randn(2, 5, 64)
    g, beta = m._gates(x, None)
    a = m.a_proj(x)
    torch.testing.assert_close(g, -m.A_log.exp() * F.softplus(a + m.dt_bias))
    torch.testing.assert_close(beta, torch.sigmoid(m.b_proj(x)))


def test_init_follows_fla_and_the_model_seed():
    cfg = lambda: ModelConfig(n_layers=2, d_model=64, mixer=GDNConfig())
    a, b, c = (build_model(cfg(), 20, seed=s) for s in (1, 1, 2))
    for block in a.blocks:
        m = block.mixer
        A, dt = m.A_log.exp(), F.softplus(m.dt_bias)
        assert ((A > 0) & (A <= 16)).all() and ((dt >= 1e-3 - 1e-7) & (dt <= 0.1 + 1e-7)).all()
    assert torch.equal(a.blocks[0].mixer.A_log, b.blocks[0].mixer.A_log)
    assert not torch.equal(a.blocks[0].mixer.A_log, c.blocks[0].mixer.A_log)
    assert not torch.equal(a.blocks[0].mixer.dt_bias, a.blocks[1].mixer.dt_bias)


def test_canon_b_sits_on_qkv_before_the_short_conv():
    m = layer(positions="B")
    assert m.canon_b.weight.shape[0] == m.conv1d.weight.shape[0] == 2 * 32 + 64  # q‖k‖v
    assert m.conv1d.bias is None and not m.conv1d.cfg.residual and m.conv1d.cfg.activation == "silu"
    x = torch.randn(1, 7, 64)
    with torch.no_grad():
        qkv = m.conv1d(m.canon_b(m.qkv(x), None, x), None)
        m.canon_b.weight.zero_()  # residual Canon with zero taps: the identity
        qkv_without = m.conv1d(m.qkv(x), None)
        assert not torch.allclose(qkv, qkv_without)
        torch.testing.assert_close(m.conv1d(m.canon_b(m.qkv(x), None, x), None), qkv_without)
    assert not hasattr(layer("none").conv1d, "weight")


def gdn_params(layers: int, d: int, conv: bool = True) -> int:
    """Closed form: q, k (d/2 each), v, gate, out (d each) = 4d²; W_a, W_b (4 heads each),
    A_log, dt_bias, the per-head norm (d/4), the short conv (2d channels × 4 taps)."""
    mixer = 4 * d * d + 2 * 4 * d + 2 * 4 + d // 4 + (8 * d if conv else 0)
    return 2 * DEPO1_VOCAB * d + layers * (2 * d + mixer + 3 * d * swiglu_width(d)) + d


def count(layers: int, d: int, mixer) -> int:
    with torch.device("meta"):
        return build_model(ModelConfig(n_layers=layers, d_model=d, mixer=mixer),
                           DEPO1_VOCAB).param_counts()["total"]


@pytest.mark.parametrize("size,total,ratio",
                         [((8, 512), 25_093_696, 1.0027), ((12, 768), 85_275_744, 1.0018)])
def test_parameters_match_llama_as_documented(size, total, ratio):
    layers, d = size
    gdn = count(layers, d, GDNConfig())
    assert gdn == gdn_params(layers, d) == total
    assert count(layers, d, GDNConfig(conv="none")) == gdn_params(layers, d, conv=False)
    assert round(gdn / count(layers, d, AttentionConfig()), 4) == ratio


@pytest.mark.parametrize("key,value", [("conv", "canon"), ("backend", "cuda"), ("autotune", "none"),
                                       ("heads", 0), ("conv_kernel", 0), ("chunk", -1),
                                       ("expand_k", 0.0), ("norm_eps", 0.0)])
def test_bad_values_name_their_key(key, value):
    with pytest.raises(ConfigError, match=f"model.mixer.{key}"):
        GDNConfig(**{key: value})


def test_bad_values_in_a_composed_config_and_shapes_name_their_key():
    with pytest.raises(ConfigError, match="model.mixer.conv"):
        to_objects(compose(["mixer=gdn", "model.mixer.conv=conv2d"]))
    with pytest.raises(ConfigError, match="model.mixer.expand_k"):
        build_model(ModelConfig(n_layers=1, d_model=64, mixer=GDNConfig(heads=3)), 20)


def test_presets_and_run_names():
    conv = to_objects(compose(["mixer=gdn", "canon=none", "task=depo_tiny"]))
    noconv = to_objects(compose(["mixer=gdn_noconv", "canon=ABCD", "task=depo_tiny"]))
    assert conv.model.mixer.conv == "conv1d" and noconv.model.mixer.conv == "none"
    assert "_gdn_canon-none" in conv.run_name and "_gdn-noconv_canon-ABCD" in noconv.run_name
    assert GDNConfig(heads=8, expand_v=2.0).tag() == "gdn-h8-v2"

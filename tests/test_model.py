"""The model: causality, cached decoding, Canon layers, RoPE options, parameter counts."""

from __future__ import annotations

import itertools

import pytest
import torch
from conftest import assert_cached_decoding_equals_full_forward, assert_causal

from playground.config import PAPER_SIZES, ModelConfig, size_preset
from playground.layers.canon import Canon, CanonConfig, causal_conv
from playground.layers.mlp import swiglu_width
from playground.layers.rotary import Rotary
from playground.mixers.attention import AttentionConfig
from playground.model import build_model

CANON_SUBSETS = ["".join(s) for r in range(5) for s in itertools.combinations("ABCD", r)]
ROPES = {"rope": (1.0, 1.0), "nope": (0.0, 1.0), "rope_quarter": (0.25, 1.0),
         "rope_half_heads": (1.0, 0.5)}
V = 23


def tiny(positions="ABCD", rope="rope", mlp="swiglu", **canon) -> torch.nn.Module:
    """A 2L64D Llama; the Canon settings ``canon`` apply where it has Canon layers."""
    frac, heads = ROPES[rope]
    cfg = ModelConfig(n_layers=2, d_model=64, head_dim=32, mlp=mlp,
                      mixer=AttentionConfig(rope_fraction=frac, rope_heads=heads),
                      canon=CanonConfig(positions=positions, **(canon if positions else {})))
    return build_model(cfg, V, seed=1).eval()


@pytest.mark.parametrize("positions", CANON_SUBSETS)
@pytest.mark.parametrize("rope", list(ROPES))
def test_causality(positions, rope):
    """Changing token t changes no logit at positions < t (and does change some at >= t)."""
    assert_causal(tiny(positions, rope), V)


@pytest.mark.parametrize("positions,rope,mlp", [("", "rope", "swiglu"), ("ABCD", "rope", "swiglu"),
                                                ("ABCD", "nope", "gelu"),
                                                ("BD", "rope_quarter", "swiglu"),
                                                ("AC", "rope_half_heads", "gelu")])
def test_cached_decoding_equals_full_forward(positions, rope, mlp):
    model = tiny(positions, rope, mlp, activation="silu", bias=True)
    assert_cached_decoding_equals_full_forward(model, V)


def test_canon_matches_explicit_sum():
    """Independent recomputation: y[t] = x[t] + sum_j w[:, K-1-j] * x[t-j]."""
    g = torch.Generator().manual_seed(3)
    for kernel in (1, 2, 4, 7):
        layer = Canon(5, CanonConfig(positions="A", kernel=kernel, bias=True))
        layer.reset_parameters(g)
        torch.nn.init.normal_(layer.bias, generator=g)
        x = torch.randn(2, 9, 5, generator=g)
        expected = x.clone()
        for t in range(9):
            for j in range(min(kernel, t + 1)):
                expected[:, t] += layer.weight[:, kernel - 1 - j] * x[:, t - j]
            expected[:, t] += layer.bias
        torch.testing.assert_close(layer(x), expected)


def test_canon_variants():
    x = torch.randn(2, 6, 4)
    zero = Canon(4, CanonConfig(positions="A", init="zero"))
    assert torch.equal(zero(x), x)  # residual + zero init = identity at step 0
    nores = Canon(4, CanonConfig(positions="A", residual=False))
    torch.testing.assert_close(nores(x), causal_conv(x, nores.weight, None))
    silu = Canon(4, CanonConfig(positions="A", activation="silu"))
    torch.testing.assert_close(silu(x),
                               x + torch.nn.functional.silu(causal_conv(x, silu.weight, None)))


def test_rotary_options():
    x = torch.randn(1, 4, 6, 16)
    assert torch.equal(Rotary(4, 16, 0.0, 1.0)(x, 0), x)  # NoPE
    quarter = Rotary(4, 16, 0.25, 1.0)(x, 3)
    assert (torch.equal(quarter[..., 4:], x[..., 4:])
            and not torch.equal(quarter[..., :4], x[..., :4]))
    half_heads = Rotary(4, 16, 1.0, 0.5)(x, 3)
    assert torch.equal(half_heads[:, 2:], x[:, 2:]) and not torch.equal(half_heads[:, :2], x[:, :2])
    # full RoPE: q·k depends on the relative position only
    rot = Rotary(1, 16, 1.0, 1.0)
    q, k = torch.randn(1, 1, 1, 16), torch.randn(1, 1, 1, 16)
    dot = [(rot(q, s + 5) * rot(k, s)).sum() for s in (0, 11, 40)]
    torch.testing.assert_close(torch.stack(dot), dot[0].expand(3), rtol=1e-4, atol=1e-4)


SIZES = {s: (size_preset(s)["n_layers"], size_preset(s)["d_model"])
         for s in PAPER_SIZES}  # conf/size


def expected_params(layers: int, d: int, vocab: int, canon: str) -> int:
    """Closed form: untied embedding + head, per layer 2 norms + qkv/out + SwiGLU, final norm."""
    ff = swiglu_width(d)
    per_layer = 2 * d + 4 * d * d + 3 * d * ff
    widths = {"A": d, "B": 3 * d, "C": d, "D": 2 * ff}
    per_layer += sum(4 * widths[p] for p in canon)
    return 2 * vocab * d + layers * per_layer + d


@pytest.mark.parametrize("size", list(SIZES))
def test_param_counts(size):
    layers, d = SIZES[size]
    counts = {}
    for canon in ("", "ABCD"):
        cfg = ModelConfig(size=size, n_layers=layers, d_model=d, mixer=AttentionConfig(),
                          canon=CanonConfig(positions=canon))
        with torch.device("meta"):
            model = build_model(cfg, 112)
        counts[canon] = model.param_counts()["total"]
        assert counts[canon] == expected_params(layers, d, 112, canon)
    if size == "12L768D":
        assert counts["ABCD"] / counts[""] - 1 < 0.005


def test_swiglu_width():
    assert [swiglu_width(d) for d in (64, 128, 512, 768)] == [192, 320, 1344, 2048]


@pytest.mark.parametrize("kernel", [1, 3, 4, 8])
def test_canon_shifted_path_matches_conv1d_reference(kernel):
    """Outputs and gradients of the layout-friendly path equal the F.conv1d reference."""
    from playground.layers.canon import causal_conv_shifted

    g = torch.Generator().manual_seed(kernel)
    x = torch.randn(2, 11, 6, generator=g, requires_grad=True)
    w = torch.randn(6, kernel, generator=g, requires_grad=True)
    b = torch.randn(6, generator=g, requires_grad=True)
    prev = torch.randn(2, kernel - 1, 6, generator=g)
    grads = []
    for fn in (causal_conv, causal_conv_shifted):
        for p in (None, prev):
            y = fn(x, w, b, p)
            gy = torch.randn(y.shape, generator=torch.Generator().manual_seed(9))
            grads.append((y, *torch.autograd.grad(y, (x, w, b), gy)))
    for ref, fast in zip(grads[:2], grads[2:]):
        for a, c in zip(ref, fast):
            torch.testing.assert_close(c, a, rtol=1e-5, atol=1e-5)

"""The ablation space: every Canon, position-encoding and MLP variant is a config value, keeps the
model causal, decodes with a cache exactly, and starts in its documented state."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import assert_causal

from playground.config import ModelConfig, compose, to_objects
from playground.errors import ConfigError
from playground.layers.alibi import alibi_slopes
from playground.layers.canon import Canon, CanonConfig, DynamicCanon
from playground.layers.mlp import MoE
from playground.mixers.attention import AttentionConfig
from playground.model import build_model

V = 19
MIXERS = {
    "rope": AttentionConfig(),
    "nope": AttentionConfig(rope_fraction=0.0),
    "rope_half": AttentionConfig(rope_fraction=0.5, rope_heads=0.5),
    "alibi": AttentionConfig(rope_fraction=0.0, bias="alibi"),
    "hard_alibi": AttentionConfig(rope_fraction=0.0, bias="hard_alibi"),
}
CANONS = {
    "none": CanonConfig(),
    "ABCD": CanonConfig(positions="ABCD"),
    "AC-nores-silu-k2-bias": CanonConfig(positions="AC", residual=False, activation="silu",
                                         kernel=2, bias=True),
    "BD-k8-past_average": CanonConfig(positions="BD", kernel=8, init="past_average"),
    "ABCD-random_fixed": CanonConfig(positions="ABCD", init="random_fixed"),
    "B-dyn-lowrank": CanonConfig(positions="B", dynamic="lowrank", rank=4),
    "ABCD-dyn-headwise": CanonConfig(positions="ABCD", dynamic="headwise", group=16),
    "B-dyn-all-linear": CanonConfig(positions="B", dynamic="lowrank", after_every_linear=True),
}
MLPS = ["swiglu", "gelu", "moe"]


def model_for(mixer="rope", canon="ABCD", mlp="swiglu"):
    c = CANONS[canon]
    if mlp == "moe" and "D" in c.positions:
        c = CanonConfig(**{**c.__dict__, "positions": c.positions.replace("D", "")})
    cfg = ModelConfig(n_layers=2, d_model=64, head_dim=16, mlp=mlp, moe_experts=4,
                      mixer=MIXERS[mixer], canon=c)
    return build_model(cfg, V, seed=3).eval()


GRID = [(m, c, "swiglu") for m in MIXERS for c in CANONS] + [("rope", "ABCD", p) for p in MLPS[1:]]


@pytest.mark.parametrize("mixer,canon,mlp", GRID)
def test_causal_and_cached_decoding(mixer, canon, mlp):
    model = model_for(mixer, canon, mlp)
    ids, full = assert_causal(model, V, length=14, t=8, seed=1, exact=mlp != "moe")
    with torch.no_grad():
        cache = model.new_cache()
        parts = [model(ids[:, :5], cache)] + [model(ids[:, i : i + 1], cache) for i in range(5, 14)]
    torch.testing.assert_close(torch.cat(parts, 1), full, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mixer", list(MIXERS))
@pytest.mark.parametrize("canon", ["ABCD", "B-dyn-lowrank", "AC-nores-silu-k2-bias"])
def test_isolated_examples_equal_separate_forwards(mixer, canon):
    """A packed window with segments gives each example exactly its stand-alone logits."""
    model = model_for(mixer, canon)
    g = torch.Generator().manual_seed(2)
    lengths = [5, 7, 3]
    ids = torch.randint(0, V, (1, sum(lengths)), generator=g)
    segments = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])[None]
    with torch.no_grad():
        packed = model(ids, segments=segments)
        start = 0
        for n in lengths:
            alone = model(ids[:, start : start + n])
            torch.testing.assert_close(packed[:, start : start + n], alone, rtol=1e-5, atol=1e-5)
            start += n


def test_canon_initial_states():
    x = torch.randn(2, 9, 8)
    assert torch.equal(Canon(8, CanonConfig(positions="A", init="zero"))(x), x)
    past = Canon(8, CanonConfig(positions="A", init="past_average", kernel=4))
    assert (torch.equal(past.weight[:, -1], torch.zeros(8))
            and torch.allclose(past.weight[:, :-1], torch.full((8, 3), 1 / 3)))
    expected = x.clone()
    for t in range(9):
        expected[:, t] = x[:, t] + x[:, max(0, t - 3):t].sum(1) / 3
    torch.testing.assert_close(past(x), expected)


def test_canon_init_scale_widens_the_default_taps():
    """``init_scale`` s: the default init's taps U(-s/sqrt(K), s/sqrt(K)), the same draw scaled;
    refused where it would be ignored (zero, past_average) or is not positive; in run names."""
    draws = {}
    for scale in (1.0, 4.0):
        layer = Canon(512, CanonConfig(positions="A", init_scale=scale))
        layer.reset_parameters(torch.Generator().manual_seed(0))
        draws[scale] = layer.weight.detach()
    torch.testing.assert_close(draws[4.0], 4 * draws[1.0])
    assert 1.9 < draws[4.0].abs().max() <= 2.0  # the bound: 4 / sqrt(4)
    for bad in ({"init_scale": 0.0}, {"init_scale": float("inf")},
                {"init": "zero", "init_scale": 2.0}, {"init": "past_average", "init_scale": 0.5}):
        with pytest.raises(ConfigError, match="model.canon.init_scale"):
            CanonConfig(positions="A", **bad)
    assert CanonConfig(positions="ABCD", residual=False, init_scale=4).tag() == "ABCD-nores-initx4"
    assert CanonConfig(positions="ABCD").tag() == "ABCD"


@pytest.mark.parametrize("init", ["default", "zero", "past_average", "random_fixed"])
def test_canon_init_current_offsets_the_current_tap(init):
    """``init_current`` c: the init's taps with c added to the current token's (the last) one,
    static ([C, K]) and dynamic (its bias [K, C]) alike, with every init; in run names."""
    def taps(current, **extra):
        cfg = CanonConfig(positions="A", init=init, init_current=current, **extra)
        layers = (Canon(16, cfg), DynamicCanon(16, 16, CanonConfig(**{**cfg.__dict__,
                                                                      "dynamic": "lowrank"})))
        for layer in layers:
            layer.reset_parameters(torch.Generator().manual_seed(0))
        return layers[0].weight.detach(), layers[1].bias.detach().T

    for base, shifted in zip(taps(0.0), taps(-1.5)):
        torch.testing.assert_close(shifted[:, :-1], base[:, :-1], rtol=0, atol=0)
        torch.testing.assert_close(shifted[:, -1], base[:, -1] - 1.5)
    if init in ("default", "random_fixed"):
        torch.testing.assert_close(taps(1.0, init_scale=4)[0], 4 * taps(0.0)[0]
                                   + torch.tensor([0.0, 0, 0, 1]))  # scaled, then added
    assert CanonConfig(positions="ABCD", residual=False, init_current=1).tag() == (
        "ABCD-nores-initc+1")
    assert CanonConfig(positions="ABCD", init_current=-1).tag() == "ABCD-initc-1"
    assert CanonConfig(positions="ABCD", init_scale=4, init_current=0.5).tag() == (
        "ABCD-initx4-initc+0.5")


@pytest.mark.parametrize("current", [math.nan, math.inf, "abc"])
def test_canon_init_current_must_be_a_finite_number(current):
    """Refused naming the key: built directly, and as an override before any compute."""
    with pytest.raises(ConfigError, match="model.canon.init_current"):
        CanonConfig(positions="A", init_current=current)
    with pytest.raises(ConfigError, match="model.canon.init_current"):
        to_objects(compose(["canon=ABCD", f"model.canon.init_current={current}"]))


@pytest.mark.parametrize("res_current,plain_current", [(0.0, 1.0), (-1.0, 0.0)])
def test_canon_init_current_one_is_the_residual(res_current, plain_current):
    """Without an activation, ``x + conv_w(x)`` is ``conv_{w+e}(x)`` (e: 1 on the current
    token's tap): a residual layer and a non-residual one with ``init_current`` one more, drawn
    from the same seed, give the same outputs and the same gradients (input and taps); and so
    do whole models (canon=ABCD against canon=ABCD_nores model.canon.init_current=1)."""
    grads = []
    for residual, current in ((True, res_current), (False, plain_current)):
        layer = Canon(24, CanonConfig(positions="A", residual=residual, init_current=current))
        layer.reset_parameters(torch.Generator().manual_seed(5))
        layer = layer.double()
        x = torch.randn(3, 11, 24, dtype=torch.float64,
                        generator=torch.Generator().manual_seed(1)).requires_grad_()
        y = layer(x)
        (y * torch.linspace(-1, 1, y.numel(), dtype=y.dtype).view_as(y)).sum().backward()
        grads.append((y.detach(), x.grad, layer.weight.grad))
    for a, b in zip(*grads):
        assert torch.allclose(a, b)
    ids = torch.randint(0, V, (2, 12), generator=torch.Generator().manual_seed(2))
    logits = []
    for residual, current in ((True, res_current), (False, plain_current)):
        canon = CanonConfig(positions="ABCD", residual=residual, init_current=current)
        cfg = ModelConfig(n_layers=2, d_model=64, head_dim=16, mixer=MIXERS["nope"], canon=canon)
        with torch.no_grad():
            logits.append(build_model(cfg, V, seed=3).eval().double()(ids))
    assert torch.allclose(*logits)


def test_random_fixed_canon_gets_no_gradient():
    model = model_for("rope", "ABCD-random_fixed")
    model.train()
    model(torch.randint(0, V, (2, 10))).sum().backward()
    canon = [m for m in model.modules() if isinstance(m, Canon)]
    assert canon and all(m.weight.grad is None and not m.weight.requires_grad for m in canon)
    assert any(p.grad is not None for p in model.parameters())


@pytest.mark.parametrize("kind", ["lowrank", "headwise"])
def test_dynamic_canon_equals_static_at_init(kind):
    cfg = CanonConfig(positions="B", dynamic=kind, rank=4, group=8)
    dyn = DynamicCanon(32, 16, cfg)
    static = Canon(32, CanonConfig(positions="B"))
    with torch.no_grad():
        bias = dyn.bias if kind == "lowrank" else dyn.bias.repeat_interleave(8, dim=1)
        static.weight.copy_(bias.T)
    x, h = torch.randn(2, 11, 32), torch.randn(2, 11, 16)
    torch.testing.assert_close(dyn(x, None, h), static(x), rtol=1e-6, atol=1e-6)


def test_dynamic_canon_filters_depend_on_the_input():
    dyn = DynamicCanon(16, 8, CanonConfig(positions="B", dynamic="lowrank", rank=2))
    torch.nn.init.normal_(dyn.up.weight)
    h = torch.randn(1, 6, 8)
    w = dyn.filters(h)
    assert w.shape == (1, 6, 16, 4) and not torch.allclose(w[0, 0], w[0, 1])


def direct_attention(q, k, v, bias):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + bias
    return torch.softmax(scores, -1) @ v


@pytest.mark.parametrize("kind", ["alibi", "hard_alibi"])
def test_distance_biases_match_direct_construction(kind):
    cfg = ModelConfig(n_layers=1, d_model=64, head_dim=16,
                      mixer=AttentionConfig(rope_fraction=0.0, bias=kind))
    attn = build_model(cfg, V, seed=0).blocks[0].mixer
    x = torch.randn(2, 10, 64)
    q, k, v = attn.qkv(x).view(2, 10, 3, 4, 16).permute(2, 0, 3, 1, 4)
    heads, t = 4, 10
    bias = torch.full((heads, t, t), float("-inf"))
    slopes = [2 ** (-8 * (h + 1) / heads) for h in range(heads)]
    for h in range(heads):
        for i in range(t):
            for j in range(i + 1):
                if kind == "alibi":
                    bias[h, i, j] = -slopes[h] * (i - j)
                elif i - j <= h + 1:
                    bias[h, i, j] = 0.0
    expected = attn.out(direct_attention(q, k, v, bias).transpose(1, 2).reshape(2, 10, 64))
    torch.testing.assert_close(attn(x), expected, rtol=1e-5, atol=1e-5)


def test_alibi_slopes_for_head_counts_that_are_not_powers_of_two():
    # Press et al.: 6 heads take the 4 slopes of 4 heads, then the 1st and 3rd of 8 heads' slopes
    four = [2 ** (-2 * (h + 1)) for h in range(4)]
    eight = [2 ** -(h + 1) for h in range(8)]
    assert alibi_slopes(6).tolist() == four + [eight[0], eight[2]]
    assert alibi_slopes(1).tolist() == [2 ** -8]


def test_moe_routing_conserves_tokens_and_balancing_loss():
    moe = MoE(16, 4)
    x = torch.randn(3, 7, 16)
    y = moe(x)
    probs, top_i, top_p = moe.route(x.reshape(-1, 16))
    assert top_i.shape == (21,) and torch.bincount(top_i, minlength=4).sum() == 21
    for n, token in enumerate(x.reshape(-1, 16)):
        expected = moe.experts[int(top_i[n])](token[None])[0] * top_p[n]
        torch.testing.assert_close(y.reshape(-1, 16)[n], expected, rtol=1e-5, atol=1e-5)
    f = torch.bincount(top_i, minlength=4).float() / 21
    torch.testing.assert_close(moe.aux_loss, 4 * (f * probs.mean(0)).sum())


def test_moe_trains_and_refuses_canon_d(make_cfg):
    from playground.run.train import run

    with pytest.raises(ConfigError, match="model.canon.positions"):
        to_objects(compose(["model.mlp=moe", "canon=ABCD"]))
    summary = run(make_cfg("model.mlp=moe", "model.moe_experts=4", "model.canon.positions=ABC",
                           "size=2L64D", "task.context=96", "task.N=8", "task.V=8", "train.steps=6",
                           "train.warmup_steps=1", "train.batch_size=4", "task.eval_size=8"))
    assert summary["status"] == "finished"


def test_isolate_examples_trains(make_cfg):
    from playground.run.train import run

    summary = run(make_cfg("data.isolate_examples=true", "size=2L64D", "task.context=96",
                           "task.N=8", "task.V=8", "train.steps=6", "train.warmup_steps=1",
                           "train.batch_size=4", "task.eval_size=8"))
    assert summary["status"] == "finished"

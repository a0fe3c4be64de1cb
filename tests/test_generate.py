"""Batched generation: left padding is invisible, cached decoding equals re-running the prefix."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_model import V, tiny

from playground.model import generate

PROMPTS = [[1, 5, 7], [1, 9, 2, 4, 4, 8, 3], [1], [1, 3, 3, 6, 2]]


@pytest.mark.parametrize("positions,rope", [("", "rope"), ("ABCD", "rope"), ("ABCD", "nope"),
                                            ("AC", "rope_quarter"), ("BD", "rope_half_heads")])
def test_left_padding_is_invisible(positions, rope):
    model = tiny(positions, rope)
    width = max(map(len, PROMPTS))
    ids = torch.zeros(len(PROMPTS), width, dtype=torch.long)
    valid = torch.zeros_like(ids, dtype=torch.bool)
    for r, p in enumerate(PROMPTS):
        ids[r, width - len(p):] = torch.tensor(p)
        valid[r, width - len(p):] = True
    with torch.no_grad():
        padded = model(ids, model.new_cache(), valid)
        for r, p in enumerate(PROMPTS):
            alone = model(torch.tensor([p]))
            torch.testing.assert_close(padded[r, width - len(p):], alone[0], rtol=1e-5, atol=1e-5)


def naive_greedy(model, prompt, max_new, stop):
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(max_new):
            nxt = int(model(torch.tensor([ids]))[0, -1].argmax())
            if nxt in stop:
                return ids[len(prompt):], True
            ids.append(nxt)
    return ids[len(prompt):], False


@pytest.mark.parametrize("positions", ["", "ABCD"])
def test_greedy_equals_rerunning_the_prefix(positions):
    model = tiny(positions, "rope")
    stop = {4, 11}
    got = generate(model, PROMPTS, max_new=12, stop=stop, batch_size=3)
    again = generate(model, PROMPTS, max_new=12, stop=stop, batch_size=3, use_cache=False)
    for p, g, h in zip(PROMPTS, got, again):
        tokens, stopped = naive_greedy(model, p, 12, stop)
        assert (g.tokens.tolist() == h.tokens.tolist() == tokens
                and g.stopped == h.stopped == stopped)


def test_sampling_is_seeded():
    model = tiny("ABCD", "rope")
    a = generate(model, PROMPTS, max_new=20, temperature=1.0, seed=3)
    b = generate(model, PROMPTS, max_new=20, temperature=1.0, seed=3)
    c = generate(model, PROMPTS, max_new=20, temperature=1.0, seed=4)
    assert all(np.array_equal(x.tokens, y.tokens) for x, y in zip(a, b))
    assert any(not np.array_equal(x.tokens, y.tokens) for x, y in zip(a, c))
    assert all(len(x.tokens) == 20 and ((x.tokens >= 0) & (x.tokens < V)).all() for x in a)


def test_sampling_follows_the_model_distribution():
    """One-step samples at temperature 1 match softmax(logits) (chi-square, 2000 draws)."""
    model = tiny("", "rope")
    prompt = [1, 5, 7]
    with torch.no_grad():
        probs = torch.softmax(model(torch.tensor([prompt]))[0, -1], -1).numpy()
    draws = generate(model, [prompt] * 2000, max_new=1, temperature=1.0, seed=0, batch_size=500)
    counts = np.bincount([int(d.tokens[0]) for d in draws], minlength=V)
    expected = 2000 * probs
    keep = expected >= 5
    chi2 = (((counts - expected) ** 2 / expected)[keep]).sum()
    assert chi2 < 60  # far above the 99.9% quantile for ~22 degrees of freedom is ~49


def test_a_cache_with_capacity_allocates_its_buffers_once_and_decodes_the_same():
    """``new_cache(capacity=n)``: each attention layer's key/value buffer is allocated once at n
    slots (no growth by doubling, whose copy briefly holds both buffers); the logits are those of
    a cache without capacity."""
    model = tiny("ABCD", "rope")
    ids = torch.tensor([[1, 5, 7, 2, 9, 3, 3, 8, 6, 4]])
    layers = [b.mixer for b in model.blocks]
    with torch.no_grad():
        logits, buffers = {}, {}
        for capacity in (None, 10):
            cache = model.new_cache(capacity=capacity)
            steps = [model(ids[:, :3], cache)]
            first = [cache.get(m).data_ptr() for m in layers]
            steps += [model(ids[:, i : i + 1], cache) for i in range(3, 10)]
            logits[capacity] = torch.cat(steps, 1)
            buffers[capacity] = ([cache.get(m).shape[3] for m in layers],
                                 first == [cache.get(m).data_ptr() for m in layers])
    torch.testing.assert_close(logits[10], logits[None], rtol=0, atol=0)
    assert buffers[10] == ([10] * len(layers), True)
    assert buffers[None][0] == [12] * len(layers) and not buffers[None][1]  # 3 → 6 → 12 slots


def _models_for_fixed_shapes():
    """Every kind of decoding state: attention (RoPE, NoPE, ALiBi, Hard-ALiBi; KV buffers and
    masks), static and dynamic Canon (conv tails), GLA, Mamba2 and Gated DeltaNet (recurrent
    states, their short convs)."""
    import test_mixers

    from playground.config import ModelConfig
    from playground.layers.canon import CanonConfig
    from playground.mixers.attention import AttentionConfig
    from playground.model import build_model

    def attention(bias):
        cfg = ModelConfig(n_layers=2, d_model=64, head_dim=32,
                          mixer=AttentionConfig(rope_fraction=0.0, bias=bias),
                          canon=CanonConfig(positions="ABCD"))
        return build_model(cfg, V, seed=1).eval()

    models = {"rope_abcd": lambda: tiny("ABCD", "rope", activation="silu", bias=True),
              "nope": lambda: tiny("", "nope"), "alibi": lambda: attention("alibi"),
              "hard_alibi": lambda: attention("hard_alibi")}
    for name in ("gla_canon_abcd", "mamba2_conv1d_canon_ab", "gdn_noconv_canon_abcd", "gdn",
                 "gla_dynamic_b_all_linear", "mamba2_canon_ab_dynamic"):
        models[name] = lambda name=name: test_mixers.tiny(name)
    return models


FIXED_SHAPE_MODELS = _models_for_fixed_shapes()


def _state_tensors(cache) -> list[torch.Tensor]:
    def flat(v):
        return [v] if isinstance(v, torch.Tensor) else [t for x in v for t in flat(x)]

    return ([t for v in cache._state.values() for t in flat(v)]
            + [cache.key_valid, cache.next_pos, cache.slot])


@pytest.mark.parametrize("name", list(FIXED_SHAPE_MODELS))
def test_fixed_shape_steps_equal_growing_ones_and_keep_their_addresses(name):
    """After a left-padded prefill, ``Cache.fix_shapes`` steps (what a CUDA graph replays) give
    the logits of ordinary cached steps, and no state tensor moves or changes shape."""
    model = FIXED_SHAPE_MODELS[name]()
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(1, V, (len(PROMPTS), 6), generator=g)
    width = max(map(len, PROMPTS))
    ids = torch.zeros(len(PROMPTS), width, dtype=torch.long)
    valid = torch.zeros_like(ids, dtype=torch.bool)
    for r, p in enumerate(PROMPTS):
        ids[r, width - len(p):], valid[r, width - len(p):] = torch.tensor(p), True
    runs = {}
    with torch.no_grad():
        for fixed in (False, True):
            cache = model.new_cache(capacity=width + tokens.shape[1])
            out = [model(ids, cache, valid)[:, -1]]
            if fixed:
                cache.fix_shapes(len(PROMPTS), torch.device("cpu"))
            for i in range(tokens.shape[1]):
                out.append(model(tokens[:, i : i + 1], cache)[:, -1])
                if fixed and i == 0:
                    where = [(t.data_ptr(), t.shape) for t in _state_tensors(cache)]
            runs[fixed] = torch.stack(out)
            assert cache.length == width + tokens.shape[1]
        assert where == [(t.data_ptr(), t.shape) for t in _state_tensors(cache)]
    torch.testing.assert_close(runs[True], runs[False], rtol=1e-5, atol=1e-5)


def test_graph_decoding_generates_the_same_tokens():
    """``generate(graph=True)``: on the CPU the fixed-shape steps run eagerly, same tokens."""
    model = FIXED_SHAPE_MODELS["rope_abcd"]()
    a = generate(model, PROMPTS, max_new=12, stop={4}, batch_size=3)
    b = generate(model, PROMPTS, max_new=12, stop={4}, batch_size=3, graph=True)
    assert ([(x.tokens.tolist(), x.stopped) for x in a]
            == [(x.tokens.tolist(), x.stopped) for x in b])


def test_fixed_shapes_need_room_in_the_cache():
    model = tiny("", "rope")
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.tensor([[1, 2]]), cache)
    with pytest.raises(ValueError, match="capacity None"):
        cache.fix_shapes(1, torch.device("cpu"))


def test_generate_bench_times_every_mode_and_checks_they_agree(tmp_path, capsys):
    import json

    from playground.bench.cli import main

    path = tmp_path / "gen.json"
    main(["generate", "task=brevo1", "task.N=8", "size=2L64D", "count=6", "batch_size=4",
          f"json={path}"])
    out = json.loads(path.read_text())
    assert out["same_tokens"] and out["new_tokens"] > 0 and out["max_new"] == 10
    assert out["agree_cached"] == out["agree_rerun"] == 1.0
    assert all(out[f"{m}_s"] > 0 for m in ("graph", "cached", "rerun"))
    with pytest.raises(SystemExit):
        main(["generate", "task=brevo1", "modes=graph,fast"])
    assert "modes='fast' is invalid" in capsys.readouterr().err


def test_decoding_graphs_choose_graph_for_generate_not_told(monkeypatch):
    """Within ``decoding_graphs(True)`` a ``generate`` call that does not pass ``graph`` decodes
    in fixed-shape steps (the path a CUDA graph replays); outside it, or told, as told."""
    import playground.model as pm

    seen = []
    real = pm._Step

    def spy(model, cache, batch, device, graph):
        seen.append(graph)
        return real(model, cache, batch, device, graph)

    monkeypatch.setattr(pm, "_Step", spy)
    model = FIXED_SHAPE_MODELS["rope_abcd"]()
    a = generate(model, PROMPTS, max_new=6, batch_size=4)
    with pm.decoding_graphs(True):
        b = generate(model, PROMPTS, max_new=6, batch_size=4)
        generate(model, PROMPTS, max_new=6, batch_size=4, graph=False)
    assert seen == [False, True, False]
    assert [x.tokens.tolist() for x in a] == [x.tokens.tolist() for x in b]


@pytest.mark.slow
def test_eval_graphs_reach_the_runs_evaluations(tmp_path, monkeypatch, make_cfg):
    """``train.eval_graphs=true``: the training loop's evaluations and ``playground-eval`` of the
    run decode with graphs (a Brevo run: its eval generates)."""
    import playground.model as pm
    from playground.run.evaluate import evaluate_run
    from playground.run.train import run

    modes = []
    real = pm._decode

    def spy(*args, **kwargs):
        modes.append(args[9])  # graph
        return real(*args, **kwargs)

    monkeypatch.setattr(pm, "_decode", spy)
    run(make_cfg("task=brevo1", "task.N=6", "size=2L64D", "train.steps=4",
                 "train.warmup_steps=0", "train.batch_size=4", "task.eval_size=4",
                 "train.eval_graphs=true", run="r"))
    out = tmp_path / "r"
    assert modes and all(modes)
    modes.clear()
    evaluate_run(out, device="cpu")
    assert modes and all(modes)

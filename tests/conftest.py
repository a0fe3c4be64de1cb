"""Shared fixtures: configs composed exactly as the CLI composes them, with CPU-test defaults."""

from __future__ import annotations

import pytest
import torch

from playground.config import compose, to_objects

TEST_DEFAULTS = ["wandb.mode=disabled", "train.progress=false", "train.device=cpu"]


@pytest.fixture
def one_thread():
    """Tiny tensors and models: intra-op threads only add synchronisation, which costs dearly on
    a loaded 2-core machine, so such a test runs single-threaded."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def make_cfg(tmp_path):
    """make_cfg(*overrides, run="run") -> composed DictConfig writing into tmp_path/<run>."""

    def make(*overrides: str, run: str = "run"):
        return compose([*TEST_DEFAULTS, f"out_dir={tmp_path / run}", *overrides])

    return make


def task_from(*overrides: str):
    """A task object built from config overrides, e.g. task_from("task=depo1", "task.N=20")."""
    from playground.tasks import build_task

    return build_task(to_objects(compose(list(overrides))).task)


def assert_causal(model, vocab_size: int, length: int = 16, t: int = 9, seed: int = 0,
                  exact: bool = True):
    """Changing token t changes no logit before t (and does change some at t or after); returns
    the ids and their logits."""
    ids = torch.randint(0, vocab_size, (2, length), generator=torch.Generator().manual_seed(seed))
    changed = ids.clone()
    changed[:, t] = (ids[:, t] + 1) % vocab_size
    with torch.no_grad():
        a, b = model(ids), model(changed)
    if exact:
        assert torch.equal(a[:, :t], b[:, :t])
    else:  # e.g. MoE: tokens are batched per expert, so the GEMMs differ by rounding only
        torch.testing.assert_close(a[:, :t], b[:, :t], rtol=1e-5, atol=1e-6)
    assert not torch.allclose(a[:, t:], b[:, t:])
    return ids, a


def assert_cached_decoding_equals_full_forward(model, vocab_size: int) -> None:
    """A prompt, a second chunk, then one token at a time through the cache == one full forward."""
    ids = torch.randint(0, vocab_size, (3, 20), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full = model(ids)
        cache = model.new_cache()
        chunks = [model(ids[:, :7], cache), model(ids[:, 7:12], cache)]
        chunks += [model(ids[:, i : i + 1], cache) for i in range(12, 20)]
    torch.testing.assert_close(torch.cat(chunks, dim=1), full, rtol=1e-5, atol=1e-5)

"""The fast sampler draws exactly what the definition draws: ``rng.integers(0, n_rules[frontier])``
per level (the reference below, the sampler as the data was first made), sentence for sentence,
with the generator left in the same state; so Lano's data stays byte-identical (pinned hashes)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from conftest import task_from

from playground.data.loader import window_stream
from playground.grammar import load_grammar, random_grammar, sample_frontiers, sample_many
from playground.grammar import sampler as sampler_module
from playground.grammar.sampler import Words, draw_rules
from playground.tasks.base import rng_for

SHIPPED = ("cfg3f", "cfg3j", "cfg3k")


def reference_frontiers(g, rng):
    """The definition: one ``integers`` call per level, bounds the frontier's rule counts."""
    frontier, frontiers = np.zeros(1, np.int64), [np.zeros(1, np.int64)]
    for i in range(g.depth):
        choice = rng.integers(0, g.n_rules[i][frontier])
        kids = g.rule_children[i][frontier, choice]
        frontier = kids[kids >= 0]
        frontiers.append(frontier)
    return frontiers


def grammars():
    """The shipped grammars and random ones, some with single-rule symbols (no draw)."""
    yield from (load_grammar(name) for name in SHIPPED)
    yield random_grammar(3, depth=5, rules_per_symbol=(1, 3))
    yield random_grammar(4, depth=4, symbols_per_level=2, terminals=2, rules_per_symbol=(1, 2),
                         rule_length=(1, 3))


def same(a, b) -> bool:
    return len(a) == len(b) and all(x.tobytes() == y.tobytes() for x, y in zip(a, b))


def test_sample_frontiers_draws_what_the_definition_draws():
    """300 seeds a grammar, three sentences from each generator in turn (so a half-word held
    between them is carried over), the generator's state compared after each."""
    for g in grammars():
        for seed in range(300):
            fast, slow = np.random.default_rng([seed, 1]), np.random.default_rng([seed, 1])
            for _ in range(3):
                assert same(sample_frontiers(g, fast), reference_frontiers(g, slow)), (g, seed)
                assert fast.bit_generator.state == slow.bit_generator.state


def test_sample_many_draws_what_the_definition_draws(monkeypatch):
    """Together, the same sentences; also when most sentences run out of words read ahead or
    their generator holds a half-word (both sampled again on their own)."""
    for g in grammars():
        rngs = [rng_for(0, "train", i) for i in range(400)]
        want = [reference_frontiers(g, rng_for(0, "train", i)) for i in range(400)]
        assert all(same(a, b) for a, b in zip(sample_many(g, rngs), want)), g
    g = load_grammar("cfg3f")
    monkeypatch.setattr(sampler_module, "read_width", lambda _g: 120)  # about half run out
    rngs = [np.random.default_rng(i) for i in range(200)]
    refs = [np.random.default_rng(i) for i in range(200)]
    for r, ref in list(zip(rngs, refs))[::3]:  # a held half-word
        r.integers(0, 2**32, dtype=np.uint32)
        ref.integers(0, 2**32, dtype=np.uint32)
    assert all(same(a, reference_frontiers(g, ref)) for a, ref in zip(sample_many(g, rngs), refs))


def test_rejected_words_are_redrawn_as_numpy_does():
    """Rule counts near 2**31 make Lemire's rejection frequent: draw_rules still returns what
    ``integers`` returns and leaves the generator where it does."""
    counts = np.array([1, 2, 3, 4, 5, 7, 2**31 + 1, 2**32 - 1, 3 * 2**30 + 5], np.int64)
    for seed in range(300):
        n = np.random.default_rng(seed).choice(counts, size=1 + seed % 40)
        fast, slow = np.random.default_rng([seed, 9]), np.random.default_rng([seed, 9])
        if seed % 2:  # start with a held half-word
            fast.integers(0, 2**32, dtype=np.uint32)
            slow.integers(0, 2**32, dtype=np.uint32)
        with Words(fast) as words:
            got = draw_rules(n, words)
        assert got.tolist() == slow.integers(0, n).tolist(), (seed, n)
        assert fast.bit_generator.state == slow.bit_generator.state


def test_lano_examples_together_equal_one_by_one():
    """``Task.examples`` (sentences sampled together) gives ``example``'s tokens, also for the
    sentences redrawn because they do not fit (a context shorter than the config allows)."""
    task = task_from("task=cfg3f")
    together = task.examples("train", 100, 300, meta=False)
    assert all(a.tokens.tobytes() == task.example("train", i).tokens.tobytes()
               for i, a in zip(range(100, 300), together))
    task.cfg.context = 200  # half of cfg3f's sentences are longer: redrawn
    together = task.examples("train", 0, 100, meta=False)
    alone = [task.example("train", i) for i in range(100)]
    assert all(a.tokens.tobytes() == b.tokens.tobytes() for a, b in zip(together, alone))
    assert all(len(a) <= 200 for a in together)


# sha256 of window_stream(task, 64, 40) and of the first 50 eval sentences with their trees, as
# the element-by-element sampler made them
PINNED = {
    "cfg3f": ("474039022c4f374b656edf4186bddb3b25bf1fcb88bab3b1a32c9000ffabd7ba",
              "55a357a847cf529d1c05a89eacf9de2c2b041751a26f6d5ad5e768c46e43b7c8"),
    "cfg3j": ("5346d399be9954204f432491bea8f04a8d0f73bac70a79150eef3624c006f1c8",
              "43c602fda77c5254deb79078142de8b9ee9b3894ed6bc0f75d857b90bb361a51"),
    "cfg3k": ("93336c7c95ccbc8f4cd42b0986e9685e0ec147e0571e27e992e1ac80c09033e9",
              "0f707f653033503c3d0d6efa360c931aee9036c6ce59d1efbac4c9d8d2ba8d99"),
}


@pytest.mark.parametrize("name", SHIPPED)
def test_lano_data_is_pinned(name):
    task = task_from(f"task={name}")
    train = hashlib.sha256(window_stream(task, 64, 40).tobytes()).hexdigest()
    h = hashlib.sha256()
    for i in range(50):
        ex = task.example("eval", i)
        h.update(ex.tokens.tobytes())
        h.update(ex.meta["tree"].encode())
    assert (train, h.hexdigest()) == PINNED[name]

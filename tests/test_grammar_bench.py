"""Benchmarks of the grammar engine (``pytest -m bench -s tests/test_grammar_bench.py``): print
the figures recorded in docs/PERFORMANCE.md and check the speed targets. CPU time of this
process is reported next to wall time, since the development machine's cores are shared."""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_grammar_oracle import long_sentence, nltk_accepts_and_count

from playground.grammar import (
    accepts,
    accepts_many,
    count_parses,
    load_grammar,
    next_symbol_probs,
    sample,
)

pytestmark = pytest.mark.bench


def timed(fn, *args) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds of this process, result) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    return time.perf_counter() - wall, time.process_time() - cpu, out


def per_sentence(fn, g, sentences) -> tuple[float, float]:
    """Mean (wall, CPU) milliseconds per sentence."""
    wall, cpu, _ = timed(lambda: [fn(g, s) for s in sentences])
    return 1e3 * wall / len(sentences), 1e3 * cpu / len(sentences)


@pytest.mark.parametrize("name,target,budget_ms", [("cfg3f", 500, 20), ("cfg3k", 1000, 100)])
def test_recognizer_speed(name, target, budget_ms):
    g = load_grammar(name)
    rng = np.random.default_rng(0)
    sentences = [long_sentence(g, rng, target) for _ in range(20)]
    assert all(accepts(g, s) for s in sentences)
    wall, cpu = per_sentence(accepts, g, sentences)
    cwall, ccpu = per_sentence(count_parses, g, sentences)
    nwall, ncpu, ok = timed(lambda: [nltk_accepts_and_count(g, s, False)[0] for s in sentences[:3]])
    mean_len = np.mean([len(s) for s in sentences])
    print(f"\n{name} recognizer, {len(sentences)} sentences of {mean_len:.0f} tokens on average: "
          f"{wall:.2f} ms wall / {cpu:.2f} ms CPU per sentence; exact parse counts {cwall:.2f} / "
          f"{ccpu:.2f} ms; nltk BottomUpLeftCornerChartParser on 3 of them: {1e3 * nwall / 3:.0f} "
          f"ms wall / {1e3 * ncpu / 3:.0f} ms CPU per sentence")
    assert all(ok) and cpu < budget_ms


def test_next_token_probabilities_speed():
    g = load_grammar("cfg3k")
    rng = np.random.default_rng(1)
    sentences = [long_sentence(g, rng, 1000) for _ in range(5)]
    wall, cpu = per_sentence(next_symbol_probs, g, sentences)
    ewall, ecpu = per_sentence(lambda g, s: next_symbol_probs(g, s, exact=True), g, sentences)
    print(f"\ncfg3k next-token probabilities, {len(sentences)} sentences of "
          f"{np.mean([len(s) for s in sentences]):.0f} tokens: {wall:.1f} ms wall / {cpu:.1f} ms "
          f"CPU per sentence (floats); exact fractions {ewall:.1f} / {ecpu:.1f} ms")
    assert cpu < 2000


def test_batched_recognition_speed():
    g = load_grammar("cfg3f")
    rng = np.random.default_rng(2)
    sentences = [sample(g, rng).tolist() for _ in range(1000)]
    wall1, cpu1, ok1 = timed(accepts_many, g, sentences, 1)
    wall2, _, ok2 = timed(accepts_many, g, sentences, 2)
    print(f"\ncfg3f batched recognition of 1000 sampled sentences "
          f"({np.mean([len(s) for s in sentences]):.0f} tokens on average): "
          f"1 process {wall1:.2f} s wall / {cpu1:.2f} s CPU; 2 processes {wall2:.2f} s wall")
    assert all(ok1) and ok1 == ok2 and wall2 < 10

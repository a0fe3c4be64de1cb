"""Depo: every answer recomputed independently from the token stream alone."""

from __future__ import annotations

import collections
import json
import math

import numpy as np
import pytest
from conftest import task_from

from playground.data.cli import main as data_main

PRESETS = ["depo_tiny", "depo1", "depo1_K4", "depo2", "depo2_K4"]


def parse_words(pieces: list[str]) -> list[tuple[str, ...]]:
    """Split a run of word pieces at end-of-word symbols (``e*``)."""
    words, cur = [], []
    for p in pieces:
        cur.append(p)
        if p.startswith("e"):
            words.append(tuple(cur))
            cur = []
    assert not cur, "a word without an end symbol"
    return words


def recompute(pieces: list[str]):
    """From the decoded pieces only: the successor map, and for each query (k, q, answer, the
    answer's piece positions incl. <ans>)."""
    assert pieces[0] == "<bos>"
    first_q = next(i for i, p in enumerate(pieces) if p.startswith("<query_"))
    words = parse_words(pieces[1:first_q])
    assert len(words) % 2 == 0
    succ = {}
    for x, y in zip(words[0::2], words[1::2]):
        assert x not in succ, "a word starts two edges"
        succ[x] = y
    queries, i = [], first_q
    while i < len(pieces):
        k = int(pieces[i][len("<query_"):-1])
        j = pieces.index("<ans>", i)
        q = tuple(pieces[i + 1 : j])
        ans = q
        for _ in range(k):
            ans = succ[ans]
        end = j + 1 + len(ans)
        queries.append((k, q, ans, list(range(j, end))))
        i = end
    return succ, queries


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("split", ["train", "eval"])
def test_answers_recomputed_from_tokens(preset, split):
    task = task_from(f"task={preset}")
    c = task.cfg
    for index in range(4):
        ex = task.example(split, index)
        pieces = task.vocab.decode(ex.tokens).split()
        succ, queries = recompute(pieces)
        n = len(succ)
        assert (n == c.N) if split == "eval" else (c.n_min <= n <= c.N)
        # one directed cycle through all n words
        w, seen = next(iter(succ)), set()
        for _ in range(n):
            seen.add(w)
            w = succ[w]
        assert len(seen) == n and set(succ.values()) == set(succ)
        assert (len(queries) == min(n, c.queries)
                and len({q for _, q, _, _ in queries}) == len(queries))
        for (k, q, ans, pos), meta_q in zip(queries, ex.meta["queries"]):
            assert 1 <= k <= c.K
            assert tuple(pieces[p] for p in pos[1:]) == ans
            assert meta_q == {"k": k, "query": " ".join(q), "answer": " ".join(ans)}
        # the loss mask covers exactly <ans> and the answer tokens
        target_pos = sorted(p for *_, pos in queries for p in pos)
        assert np.flatnonzero(ex.loss_mask).tolist() == target_pos
        assert ex.meta["cycle"] and len(ex.meta["cycle"]) == n
        assert len(ex) <= task.max_length()


@pytest.mark.parametrize("preset", PRESETS)
def test_words_follow_the_spec(preset):
    task = task_from(f"task={preset}")
    c = task.cfg
    ex = task.example("eval", 0)
    words = [w.split() for w in ex.meta["cycle"]]
    assert len({tuple(w) for w in words}) == c.N
    for w in words:
        assert c.min_len <= len(w) <= c.max_len
        assert all(p.startswith("c") and int(p[1:]) < c.V for p in w[:-1])
        assert w[-1].startswith("e") and int(w[-1][1:]) < c.V


def test_deterministic_and_splits_disjoint():
    task = task_from("task=depo1")
    a, b = task.example("train", 7), task.example("train", 7)
    assert a.tokens.tobytes() == b.tokens.tobytes() and a.meta == b.meta
    assert task.example("eval", 7).tokens.tobytes() != a.tokens.tobytes()
    other_seed = task_from("task=depo1", "task.seed=1")
    assert other_seed.example("train", 7).tokens.tobytes() != a.tokens.tobytes()


def test_training_n_distribution():
    """n ~ P(n) ∝ 1/(n + √N) on {3..N}: compare frequencies with the law (chi-square)."""
    task = task_from("task=depo_tiny", "task.N=8", "task.V=8")
    counts = collections.Counter(task.example("train", i).meta["n"] for i in range(3000))
    ns = np.arange(3, 9)
    p = 1 / (ns + math.sqrt(8))
    expected = 3000 * p / p.sum()
    observed = np.array([counts[n] for n in ns])
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    assert set(counts) == set(ns.tolist())
    assert chi2 < 20.5  # 99.9% quantile of chi-square with 5 degrees of freedom


def test_eval_k_spread_evenly():
    task = task_from("task=depo1_K4")
    ks = collections.Counter(q["k"]
                             for i in range(8) for q in task.example("eval", i).meta["queries"])
    assert set(ks) == {1, 2, 3, 4} and max(ks.values()) - min(ks.values()) <= 1


def test_dump_lets_anyone_recompute(tmp_path, capsys):
    out = tmp_path / "d.jsonl"
    data_main(["dump", "task=depo1", "task.N=40", "split=eval", "count=20", f"out={out}"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 20
    for row in rows:
        assert set(row) == {"tokens", "pieces", "loss_mask", "meta"}
        _, queries = recompute(row["pieces"])
        assert [(k, " ".join(q), " ".join(a)) for k, q, a, _ in queries] == [
            (q["k"], q["query"], q["answer"]) for q in row["meta"]["queries"]]
        cycle = row["meta"]["cycle"]
        assert len(cycle) == 40 and all(
            f"{x} {y}" in " ".join(row["pieces"]) for x, y in zip(cycle, cycle[1:] + cycle[:1]))


def test_show_and_stats(capsys):
    data_main(["show", "task=depo_tiny", "count=2"])
    text = capsys.readouterr().out
    assert text.count("# example") == 2 and "[<ans>]" in text
    data_main(["stats", "task=depo_tiny", "count=50"])
    assert "windows" in capsys.readouterr().out


def test_bad_task_key_names_it(capsys):
    with pytest.raises(SystemExit):
        data_main(["show", "task=depo1", "task.NN=3"])
    assert "task.NN" in capsys.readouterr().err


def test_depth_reached_counts_leading_hops_above_the_bar():
    from playground.tasks.depo import DEPTH_BAR, depth_reached

    assert depth_reached([]) == 0 and depth_reached([0.74, 0.9]) == 0
    assert depth_reached([0.99, 0.9, 0.76, 0.2]) == 3 and depth_reached([0.99, 0.5, 0.99]) == 1
    assert depth_reached([DEPTH_BAR] * 4) == 4

"""Brevo: DAG rules, ancestor sets and topological answers recomputed from the tokens alone; the
validator; generative evaluation end to end through a scripted model."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest
from conftest import task_from
from oracle import ScriptedModel

from playground.tasks.brevo import is_valid_answer

PRESETS = ["brevo_tiny", "brevo1", "brevo2"]


def parse(task, ex):
    """Edges, query and answer names read back from the decoded pieces only."""
    pieces = task.vocab.decode(ex.tokens).split()
    q_at, a_at = pieces.index("<query>"), pieces.index("<ans>")
    assert pieces[0] == "<bos>" and pieces[-1] == "<eos>"
    names = split_words(pieces[1:q_at], task.cfg.names)
    edges = list(zip(names[0::2], names[1::2]))
    (query,) = split_words(pieces[q_at + 1 : a_at], task.cfg.names)
    answer = split_words(pieces[a_at + 1 : -1], task.cfg.names)
    return edges, query, answer, pieces, a_at


def split_words(pieces, mode):
    if mode == "token":
        return list(pieces)
    words, cur = [], []
    for p in pieces:
        cur.append(p)
        if p.startswith("e"):
            words.append(" ".join(cur))
            cur = []
    assert not cur
    return words


def bfs_ancestors(edges, q):
    parents = defaultdict(set)
    for u, w in edges:
        parents[w].add(u)
    seen, frontier = set(), {q}
    while frontier:
        frontier = {u for w in frontier for u in parents[w]} - seen
        seen |= frontier
    return seen, parents


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("split", ["train", "eval"])
def test_structure_and_answer_recomputed(preset, split):
    task = task_from(f"task={preset}")
    c = task.cfg
    for index in range(6):
        ex = task.example(split, index)
        edges, query, answer, pieces, a_at = parse(task, ex)
        n = ex.meta["n"]
        assert (n == c.N) if split == "eval" else (c.n_min <= n <= c.N)
        assert len(set(edges)) == len(edges)
        indeg, outdeg = defaultdict(int), defaultdict(int)
        for u, w in edges:
            indeg[w] += 1
            outdeg[u] += 1
        assert max(indeg.values()) <= 4 and max(outdeg.values()) <= 4
        sources = n - len(indeg)
        assert 1 <= sources <= (n - 1) // 4 + 1 and sources == ex.meta["sources"]
        order = ex.meta["order"]
        assert len(order) == n and set(order) >= {x for e in edges for x in e}
        assert (all(indeg[v] == 0 for v in order[:sources])
                and all(indeg[v] > 0 for v in order[sources:]))
        pos = {v: i for i, v in enumerate(order)}
        assert all(pos[u] < pos[w] for u, w in edges)
        assert pos[query] >= max(sources, 3 * n // 4) and indeg[query] > 0  # paper: last quarter
        anc, parents = bfs_ancestors(edges, query)
        assert set(answer) == anc and len(answer) == len(anc)
        placed = set()
        for v in answer:
            assert parents[v] <= placed
            placed.add(v)
        targets = np.flatnonzero(ex.loss_mask).tolist()
        assert targets == list(range(a_at, len(pieces)))  # <ans>, the answer, <eos>
        # depth: shortest parent-path length from q to a vertex without parents
        depth, frontier = 0, {query}
        while all(parents[v] for v in frontier):
            frontier = {u for v in frontier for u in parents[v]}
            depth += 1
        assert ex.meta["depth"] == depth >= 1


def test_query_rule_options():
    last = task_from("task=brevo1", "task.N=20", "task.query=last", "task.include_query=true")
    for i in range(5):
        ex = last.example("eval", i)
        assert ex.meta["query"] == ex.meta["order"][-1]
        assert ex.meta["answer"][-1] == ex.meta["query"]


def all_topological_orders(parents, keep):
    for perm in itertools.permutations(sorted(keep)):
        pos = {v: i for i, v in enumerate(perm)}
        if all(pos[u] < pos[v] for v in keep for u in parents[v]):
            yield list(perm)


def test_validator_accepts_every_valid_order_and_rejects_others():
    task = task_from("task=brevo_tiny", "task.N=7")
    checked = 0
    for index in range(40):
        ex = task.example("eval", index)
        parents = defaultdict(list)
        for u, w in ex.meta["edges"]:
            parents[w].append(u)
        anc = set(ex.meta["ancestors"])
        if len(anc) > 6:
            continue
        valid = list(all_topological_orders(parents, anc))
        assert ex.meta["answer"] in valid
        for order in valid:
            assert is_valid_answer(order, parents, anc)
        for perm in itertools.permutations(sorted(anc)):
            assert is_valid_answer(list(perm), parents, anc) == (list(perm) in valid)
        good = valid[0]
        assert not is_valid_answer(good[:-1], parents, anc)  # missing
        assert not is_valid_answer(good + good[:1], parents, anc)  # duplicated
        outsider = next(v for v in ex.meta["order"] if v not in anc)
        assert not is_valid_answer(good + [outsider], parents, anc)  # extra
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("preset", ["brevo_tiny", "brevo2"])
def test_generative_evaluation_end_to_end(preset):
    task = task_from(f"task={preset}", "task.eval_size=12")
    exs = task.eval_examples()
    right = {tuple(ex.tokens[: ex.meta["answer_start"]].tolist()):
             ex.tokens[ex.meta["answer_start"]:].tolist() for ex in exs}
    model = ScriptedModel(len(task.vocab), right, fallback=task.vocab.eos)
    assert task.evaluate(model, exs, batch_size=5)["acc"] == 1.0
    # another valid order (reversed sources-first layering) is accepted too; a wrong one is not
    wrong = {k: v[1:] for k, v in right.items()}  # first answer vertex dropped
    assert task.evaluate(ScriptedModel(len(task.vocab), wrong, task.vocab.eos), exs)["acc"] == 0.0
    never_stops = {k: v[:-1] for k, v in right.items()}  # no <eos>: not counted as correct
    model = ScriptedModel(len(task.vocab), never_stops, fallback=task.vocab["<query>"])
    assert task.evaluate(model, exs)["acc"] == 0.0


def test_distinct_indices_uniform():
    """The parent sampler draws p distinct indices uniformly (chi-square over all pairs of 5)."""
    import collections

    from playground.tasks.brevo import distinct_indices

    rng = np.random.default_rng(0)
    counts = collections.Counter(tuple(distinct_indices(rng.random(2).tolist(), 5))
                                 for _ in range(20000))
    assert len(counts) == 10 and all(len(set(k)) == 2 for k in counts)
    expected = 2000
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < 27.9  # 99.9% quantile, 9 degrees of freedom

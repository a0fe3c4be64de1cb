"""Mano: values recomputed by a separate evaluator of the prefix expression."""

from __future__ import annotations

import collections

import pytest
import torch
from conftest import task_from

OPS = {"+", "-", "*", "/"}


def inverse(b: int) -> int:
    return next(x for x in range(23) if (b * x) % 23 == 1)


def evaluate_prefix(pieces: list[str]) -> tuple[int, int]:
    """Right-to-left stack evaluation; returns (value, number of operators)."""
    stack, ops = [], 0
    for p in reversed(pieces):
        op = p.rstrip("'")
        if op in OPS:
            a, b = stack.pop(), stack.pop()
            ops += 1
            if op == "/":
                assert b != 0, "division by zero reached the data"
            stack.append({"+": a + b, "-": a - b, "*": a * b,
                          "/": a * (inverse(b) if b else 0)}[op] % 23)
        else:
            stack.append(int(p))
    assert len(stack) == 1
    return stack[0], ops


@pytest.mark.parametrize("overrides",
                         [("task=mano",), ("task=mano", "task.L=16", "task.division=true"),
                          ("task=mano_tiny", "task.augment=true", "task.loss=answer")])
@pytest.mark.parametrize("split", ["train", "eval", "test"])
def test_values_recomputed(overrides, split):
    task = task_from(*overrides)
    c = task.cfg
    for index in range(30):
        ex = task.example(split, index)
        pieces = task.vocab.decode(ex.tokens).split()
        assert pieces[0].rstrip("'") == "<bos>" and pieces[-2].rstrip("'") == "<ans>"
        value, ops = evaluate_prefix(pieces[2:-2])
        assert pieces[1].rstrip("'") == f"<len_{ops}>" and ops == ex.meta["l"]
        assert int(pieces[-1]) == value == ex.meta["value"]
        assert 1 <= ops <= c.L and ops == {"train": ops, "eval": c.L,
                                           "test": 1 + index % c.L}[split]
        mask = ex.loss_mask.tolist()
        assert mask == ([True] * len(pieces) if c.loss == "all"
                        else [False] * (len(pieces) - 2) + [True, True])


def test_augment_uses_both_synonyms_and_train_l_is_uniform():
    task = task_from("task=mano_tiny", "task.augment=true", "task.L=4")
    pieces = collections.Counter()
    ls = collections.Counter()
    for i in range(800):
        ex = task.example("train", i)
        pieces.update(task.vocab.decode(ex.tokens).split())
        ls[ex.meta["l"]] += 1
    assert pieces["<bos>"] > 300 and pieces["<bos>'"] > 300 and pieces["+'"] > 0 and pieces["+"] > 0
    assert set(ls) == {1, 2, 3, 4} and min(ls.values()) > 150


class Echo(torch.nn.Module):
    """Predicts every known example's true next token (teacher forcing's perfect model), and
    ``<pad>`` everywhere in any other sequence."""

    def __init__(self, examples, vocab_size):
        super().__init__()
        self.p = torch.nn.Parameter(torch.zeros(1))
        self.examples, self.vocab_size = [ex.tokens.tolist() for ex in examples], vocab_size

    def forward(self, ids, cache=None, valid=None):
        out = torch.full((*ids.shape, self.vocab_size), -1e4)
        for r, row in enumerate(ids.tolist()):
            seq = next((s for s in self.examples if s == row[: len(s)]), [])
            for t in range(len(seq) - 1):
                out[r, t, seq[t + 1]] = 0.0
        return out


def test_evaluate_reports_per_l():
    task = task_from("task=mano_tiny", "task.eval_size=40")
    exs = task.eval_examples()
    metrics = task.evaluate(Echo(exs, len(task.vocab)), exs, batch_size=7)
    assert metrics == {"acc": 1.0, "acc_l1": 1.0, "acc_l2": 1.0, "acc_all_l": 1.0}


def test_headline_accuracy_reads_the_eval_set_only():
    """A model right on exactly the l = L eval set and wrong elsewhere: ``acc`` 1, every
    per-l accuracy of the diagnostic set 0 (the two sets never mix)."""
    task = task_from("task=mano_tiny", "task.eval_size=30", "task.L=3")
    exs = task.eval_examples()
    assert [ex.meta["split"] for ex in exs] == ["eval"] * 30 + ["test"] * 30
    metrics = task.evaluate(Echo(exs[:30], len(task.vocab)), exs, batch_size=8)
    assert metrics == {"acc": 1.0, "acc_l1": 0.0, "acc_l2": 0.0, "acc_l3": 0.0, "acc_all_l": 0.0}
    assert task.evaluate(Echo(exs, len(task.vocab)), exs[:30]) == {"acc": 1.0}


def parse_prefix(pieces: list[str], at: int = 0) -> tuple[int, int, int]:
    """Recursive descent over a prefix expression from ``pieces[at]``: (value mod 23, operators,
    index after it). Division is multiplication by b^21 (Fermat: b^22 = 1 mod 23)."""
    head = pieces[at].rstrip("'")
    if head.isdigit():
        return int(head), 0, at + 1
    a, ops_a, at = parse_prefix(pieces, at + 1)
    b, ops_b, at = parse_prefix(pieces, at)
    value = {"+": a + b, "-": a - b, "*": a * b, "/": a * b**21}[head] % 23
    return value, 1 + ops_a + ops_b, at


@pytest.mark.parametrize("overrides", [("task=mano",), ("task=mano", "task.L=13",
                                                        "task.division=true", "task.augment=true")])
def test_every_eval_example_has_exactly_L_operators(overrides):
    """../shared/TASKS.md: Mano is evaluated at l = L. Every example of the eval set, counted and
    valued by a parser of our own; the diagnostic set covers every l evenly."""
    task = task_from(*overrides, "task.eval_size=120")
    L = task.cfg.L
    exs = task.eval_examples()
    for ex in exs:
        pieces = task.vocab.decode(ex.tokens).split()
        value, ops, end = parse_prefix(pieces, 2)
        assert end == len(pieces) - 2 and int(pieces[-1]) == value
        assert pieces[1].rstrip("'") == f"<len_{ops}>"
        assert ex.meta["split"] != "eval" or ops == L
    diag = collections.Counter(parse_prefix(task.vocab.decode(ex.tokens).split(), 2)[1]
                               for ex in exs if ex.meta["split"] == "test")
    assert sum(1 for ex in exs if ex.meta["split"] == "eval") == 120
    assert set(diag) == set(range(1, L + 1)) and max(diag.values()) - min(diag.values()) <= 1

"""Mano: values recomputed by a separate evaluator of the prefix expression."""

from __future__ import annotations

import collections

import numpy as np
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
            stack.append({"+": a + b, "-": a - b, "*": a * b, "/": a * (inverse(b) if b else 0)}[op] % 23)
        else:
            stack.append(int(p))
    assert len(stack) == 1
    return stack[0], ops


@pytest.mark.parametrize("overrides", [("task=mano",), ("task=mano", "task.L=16", "task.division=true"),
                                       ("task=mano_tiny", "task.augment=true", "task.loss=answer")])
@pytest.mark.parametrize("split", ["train", "eval"])
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
        assert 1 <= ops <= c.L and (split == "train" or index % 2 or ops == c.L)
        mask = ex.loss_mask.tolist()
        assert mask == ([True] * len(pieces) if c.loss == "all" else [False] * (len(pieces) - 2) + [True, True])


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
    """Predicts every known example's true next token (teacher forcing's perfect model)."""

    def __init__(self, examples, vocab_size):
        super().__init__()
        self.p = torch.nn.Parameter(torch.zeros(1))
        self.examples, self.vocab_size = [ex.tokens.tolist() for ex in examples], vocab_size

    def forward(self, ids, cache=None, valid=None):
        out = torch.full((*ids.shape, self.vocab_size), -1e4)
        for r, row in enumerate(ids.tolist()):
            seq = next(s for s in self.examples if s == row[: len(s)])
            for t in range(len(seq) - 1):
                out[r, t, seq[t + 1]] = 0.0
        return out


def test_evaluate_reports_per_l():
    task = task_from("task=mano_tiny", "task.eval_size=40")
    exs = task.eval_examples()
    metrics = task.evaluate(Echo(exs, len(task.vocab)), exs, batch_size=7)
    assert metrics["acc"] == 1.0 and metrics["acc_l1"] == 1.0 and metrics["acc_l2"] == 1.0
    assert np.isclose(metrics["acc_all_l"], 1.0)

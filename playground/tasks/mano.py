"""Mano: knowledge manipulation. Evaluate a prefix expression with exactly l operators mod 23.

gen(0) = a value ~ U[0, 22]; gen(l) = ``op gen(l1) gen(l-1-l1)`` with op ~ U{+, −, ×} (÷ through
the modular inverse when ``division=true``; a right operand worth 0 is resampled) and
l1 ~ U[0, l-1]. Layout::

    <bos> <len_l> expression <ans> value

With ``augment=true`` (the official "knowledge augment") every operator, ``<bos>``, ``<len_l>``
and ``<ans>`` is written with one of two synonym tokens picked at random. The paper trains on
all tokens (``loss=all``); ``loss=answer`` trains on ``<ans>`` and the value only.

A decoded example (``playground-data show task=mano task.L=3``, eval split; every token is a
target)::

    <bos> <len_3> - * + 18 5 21 20 <ans> 3

Evaluation (argmax of the answer token given the true prefix, exact match), on two sets:

* ``acc`` (the primary metric, the paper's): the eval set, ``eval_size`` expressions of the
  ``eval`` split, every one with exactly l = L operators (../shared/TASKS.md, Mano);
* ``acc_l{l}``: per-l accuracy on the stratified diagnostic set, ``eval_size`` expressions of
  the ``test`` split where example i has l = 1 + i mod L (``acc_all_l``: that whole set, l
  uniform over 1..L). It shows where accuracy falls off; it is never part of ``acc``.

Each example's ``meta["split"]`` says which set it belongs to.

Packing (``data.packing=auto``): ``aligned``. Examples are short (at most 2L + 5 tokens) and
independent; cut by a window edge, the answer would lose its expression (the answer must not be
cut from its question).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from playground.errors import check
from playground.tasks.base import (
    Example,
    Task,
    TaskConfig,
    Vocab,
    rng_for,
    span_accuracy,
    span_counts,
    teacher_forced_predictions,
)

MOD = 23
DIAGNOSTIC = "test"  # the split of the stratified diagnostic set (l = 1 + index mod L)
OPS = ("+", "-", "*", "/")


def apply(op: str, a: int, b: int) -> int:
    if op == "+":
        return (a + b) % MOD
    if op == "-":
        return (a - b) % MOD
    if op == "*":
        return (a * b) % MOD
    return (a * pow(b, MOD - 2, MOD)) % MOD  # b^(p-2) is b's inverse mod a prime p


@dataclass
class ManoConfig(TaskConfig):
    name: str = "mano"
    preset: str = "mano"
    L: int = 10  # operators at eval; train l ~ U[1, L]
    division: bool = False
    augment: bool = False  # two synonym tokens per operator / <bos> / <len_l> / <ans>
    loss: str = "all"  # all (paper) | answer
    context: int = 1024

    difficulty_keys: ClassVar[tuple[str, ...]] = ("L",)

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.L >= 1, "task.L", self.L, "an integer >= 1")
        check(self.loss in ("all", "answer"), "task.loss", self.loss, "all or answer")


def uniforms(rng: np.random.Generator, chunk: int) -> Iterator[float]:
    """An endless stream of U[0, 1) floats from ``rng``, drawn ``chunk`` at a time."""
    while True:
        yield from rng.random(chunk).tolist()


class Mano(Task):
    Config = ManoConfig
    primary_metric = "acc"

    def __init__(self, cfg: ManoConfig):
        super().__init__(cfg)
        self._ops = OPS if cfg.division else OPS[:3]
        self._values = [self.vocab[str(i)] for i in range(MOD)]

    def build_vocab(self) -> Vocab:
        c = self.cfg
        syn = ["", "'"] if c.augment else [""]
        ops = OPS if c.division else OPS[:3]
        pieces = [f"{o}{s}" for o in ops for s in syn]
        pieces += [f"<len_{lv}>{s}" for lv in range(1, c.L + 1) for s in syn]
        pieces += [f"{t}'" for t in ("<bos>", "<ans>") if c.augment]
        return Vocab(pieces + [str(i) for i in range(MOD)])

    def max_length(self) -> int:
        return 2 + (2 * self.cfg.L + 1) + 2

    def _token(self, u: Iterator[float], piece: str) -> int:
        """A piece, or its synonym half of the time under knowledge augment."""
        if self.cfg.augment and next(u) < 0.5:
            return self.vocab[f"{piece}'"]
        return self.vocab[piece]

    def _expr(self, u: Iterator[float], ops: int, out: list[int]) -> int:
        """Append gen(ops) in prefix form to ``out``; return its value. ``u``: the example's
        stream of uniforms (drawn in bulk: per-call random draws dominated the cost)."""
        if ops == 0:
            value = int(next(u) * MOD)
            out.append(self._values[value])
            return value
        op = self._ops[int(next(u) * len(self._ops))]
        left_ops = int(next(u) * ops)
        out.append(self._token(u, op))
        a = self._expr(u, left_ops, out)
        mark = len(out)
        b = self._expr(u, ops - 1 - left_ops, out)
        while op == "/" and b == 0:  # resample the divisor subtree
            del out[mark:]
            b = self._expr(u, ops - 1 - left_ops, out)
        return apply(op, a, b)

    def _operators(self, split: str, index: int, u: Iterator[float]) -> int:
        """l of example ``index``: U[1, L] in training, L in the eval set, 1 + index mod L in the
        stratified diagnostic set (the test split)."""
        L = self.cfg.L
        if split == "train":
            return 1 + int(next(u) * L)
        return L if split == "eval" else 1 + index % L

    def example(self, split: str, index: int, meta: bool = True) -> Example:
        c = self.cfg
        u = uniforms(rng_for(c.seed, split, index), 4 * c.L + 8)
        ops = self._operators(split, index, u)
        expr: list[int] = []
        value = self._expr(u, ops, expr)
        tokens = [self._token(u, "<bos>"), self._token(u, f"<len_{ops}>"), *expr,
                  self._token(u, "<ans>"), self._values[value]]
        mask = (np.ones(len(tokens), bool) if c.loss == "all"
                else np.arange(len(tokens)) >= len(tokens) - 2)
        end = len(tokens)
        info = {"l": ops, "value": value, "expression": self.vocab.decode(expr), "split": split,
                "spans": [{"start": end - 1, "end": end, "l": ops}]} if meta else {}
        return Example(np.asarray(tokens, np.int32), mask, info)

    def eval_examples(self) -> list[Example]:
        """The eval set (l = L), then the stratified diagnostic set (module docstring)."""
        size = self.cfg.eval_size
        return ([self.example("eval", i) for i in range(size)]
                + [self.example(DIAGNOSTIC, i) for i in range(size)])

    def evaluate(self, model, examples: list[Example], batch_size: int = 64) -> dict[str, float]:
        """``acc`` on the examples of the eval set; ``acc_l{l}`` and ``acc_all_l`` on those of
        the diagnostic set (either may be absent from ``examples``: its metrics are then left
        out, ``acc`` as NaN)."""
        preds = teacher_forced_predictions(model, examples, self.vocab.pad, batch_size)
        pairs = list(zip(examples, preds))
        main = [pair for pair in pairs if pair[0].meta["split"] != DIAGNOSTIC]
        diag = [pair for pair in pairs if pair[0].meta["split"] == DIAGNOSTIC]
        out = {"acc": span_accuracy(*zip(*main), "l")["acc"] if main else float("nan")}
        if diag:
            per_l = span_accuracy(*zip(*diag), "l")
            out.update({k: v for k, v in per_l.items() if k.startswith("acc_l")},
                       acc_all_l=per_l["acc"])
        return out

    def question_counts(self) -> dict[str, int]:
        """``acc``: the eval set's expressions; ``acc_l<l>`` / ``acc_all_l``:
        the diagnostic set's."""
        examples = self.eval_examples()
        main = [ex for ex in examples if ex.meta["split"] != DIAGNOSTIC]
        diag = span_counts([ex for ex in examples if ex.meta["split"] == DIAGNOSTIC], "l")
        return {"acc": span_counts(main, "l").get("acc", 0),
                "acc_all_l": diag.pop("acc", 0), **diag}

    def chance(self, metric: str) -> float | None:
        """1/23 for an accuracy: the answer is a residue mod 23."""
        return 1.0 / MOD if metric.startswith("acc") else None

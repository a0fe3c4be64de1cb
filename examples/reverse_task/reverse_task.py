"""Reverse: write a random string backwards — the worked example of docs/adding_a_task.md, a
task in its own package, outside canon-playground, registered by one entry point
(``pyproject.toml`` beside this file).

Layout: ``<bos> s1 … sn <ans> sn … s1 <eos>`` with n ~ U[n_min, N] in training and n = N in
evaluation; loss on ``<ans>``, the reversed string and ``<eos>``. A decoded example
(``playground-data show task=reverse task.N=5``; targets in brackets)::

    <bos> s4 s7 s7 s4 s2 [<ans>] [s2] [s4] [s7] [s7] [s4] [<eos>]

Evaluation: the reversed string is exact-matched token by token under teacher forcing (which
equals greedy decoding here, since every answer token is determined by the prompt).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from playground.errors import check
from playground.tasks.base import (
    Example,
    ExampleBuilder,
    Task,
    TaskConfig,
    Vocab,
    rng_for,
    span_accuracy,
    teacher_forced_predictions,
)


@dataclass
class ReverseConfig(TaskConfig):
    name: str = "reverse"
    preset: str = "reverse"
    N: int = 12  # longest string; eval uses n = N
    n_min: int = 1
    symbols: int = 8
    context: int = 128
    eval_size: int = 256

    difficulty_keys: ClassVar[tuple[str, ...]] = ("N",)

    def __post_init__(self) -> None:
        super().__post_init__()
        check(1 <= self.n_min <= self.N, "task.n_min", self.n_min, f"1 <= n_min <= N (N={self.N})")
        check(self.symbols >= 2, "task.symbols", self.symbols, "an integer >= 2")


class Reverse(Task):
    Config = ReverseConfig
    primary_metric = "acc"

    def build_vocab(self) -> Vocab:
        return Vocab([f"s{i}" for i in range(self.cfg.symbols)])

    def max_length(self) -> int:
        return 2 * self.cfg.N + 3

    def example(self, split: str, index: int, meta: bool = True) -> Example:
        c, v = self.cfg, self.vocab
        rng = rng_for(c.seed, split, index)
        n = int(rng.integers(c.n_min, c.N + 1)) if split == "train" else c.N
        string = (v["s0"] + rng.integers(0, c.symbols, size=n)).tolist()
        b = ExampleBuilder()
        b.add([v.bos, *string])
        b.add([v.ans], target=True)
        start, end = b.add(string[::-1], target=True)
        b.add([v.eos], target=True)
        return b.build({"n": n, "spans": [{"start": start, "end": end, "n": n}]})

    def evaluate(self, model, examples: list[Example], batch_size: int = 64) -> dict[str, float]:
        preds = teacher_forced_predictions(model, examples, self.vocab.pad, batch_size)
        metrics = span_accuracy(examples, preds, "n")
        return {"acc": metrics["acc"], "tok_acc": metrics["tok_acc"]}

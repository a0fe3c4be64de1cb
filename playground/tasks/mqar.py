"""MQAR: multi-query associative recall with variable-length keys (Dynamic Short Convolutions,
§3.1), and standard MQAR (Zoology) as the special case of one-token keys without a delimiter.

Each of n (key, value) pairs is written ``key <Lk> value`` — a key of 1–3 tokens, a delimiter
that encodes the key length, one value token — and every pair appears twice: first all pairs in
a random order, then all again in a new order; the value at the second occurrence is the target.
Keys are distinct but share tokens (one key can be a suffix of another); filler tokens from
their own vocabulary may sit between pairs. A decoded example (``playground-data show
task=mqar task.pairs=[3] task.filler_rate=0.5``; targets in brackets)::

    <bos> k56 k63 <L2> val57 f7 k61 <L1> val4 k19 k51 <L2> val3 k19 k51 <L2> [val3]
    k61 <L1> [val4] f9 f11 k56 k63 <L2> [val57]

Training may mix several (pairs, length) settings; ``length > 0`` pads a setting to exactly that
many tokens with fillers spread at random over the gaps. Evaluation: argmax accuracy of each
supervised value given the true prefix, overall and per key length, on the ``eval_setting``.

Longer form (``Task.at_length``, length-generalisation eval): at scale s every setting has s ×
the pairs (and s × its length when padded) and the context is s × longer; the vocabulary is
unchanged, so a model sees more pairs, more distinct keys and longer recall distances.

Packing (``data.packing=auto``): ``aligned``. An example is one independent set of pairs; cut by a
window edge, a value's second occurrence would lose the first one it is recalled from (the
answer must not be cut from its question).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from playground.errors import check
from playground.tasks.base import (
    Example,
    Task,
    TaskConfig,
    Vocab,
    check_word_supply,
    distinct_words,
    rng_for,
    span_accuracy,
    span_counts,
    teacher_forced_predictions,
)

GAPS = ("all", "queries")


@dataclass
class MqarConfig(TaskConfig):
    name: str = "mqar"
    preset: str = "mqar"
    pairs: list[int] = field(default_factory=lambda: [8])  # pairs per setting
    lengths: list[int] = field(default_factory=lambda: [0])  # tokens per setting (0 = no padding)
    eval_setting: int = -1  # which setting the eval set uses (default: the last)
    key_vocab: int = 64
    value_vocab: int = 64
    filler_vocab: int = 16
    min_key_len: int = 1
    max_key_len: int = 3
    delimiter: bool = True  # <Lk> after each key; needed when key lengths vary
    filler_rate: float = 0.0  # mean fillers per gap (Poisson) for settings with length 0
    filler_gaps: str = "all"  # all: between any pairs | queries: only among the second occurrences
    train_examples: int = 0  # > 0: a finite training set of this many examples, cycled
    context: int = 256

    difficulty_keys: ClassVar[tuple[str, ...]] = ("pairs",)

    def __post_init__(self) -> None:
        super().__post_init__()
        check(len(self.pairs) >= 1 and len(self.pairs) == len(self.lengths), "task.lengths",
              self.lengths, f"one length per entry of task.pairs={self.pairs}")
        check(all(p >= 1 for p in self.pairs), "task.pairs", self.pairs, "integers >= 1")
        check(-len(self.pairs) <= self.eval_setting < len(self.pairs), "task.eval_setting",
              self.eval_setting, f"an index into task.pairs (length {len(self.pairs)})")
        check(1 <= self.min_key_len <= self.max_key_len <= 3, "task.max_key_len", self.max_key_len,
              "1 <= min_key_len <= max_key_len <= 3")
        check(self.delimiter or self.min_key_len == self.max_key_len, "task.delimiter",
              self.delimiter, "true when keys vary in length (otherwise keys are ambiguous)")
        check(self.filler_gaps in GAPS, "task.filler_gaps", self.filler_gaps, f"one of {GAPS}")
        check(self.filler_rate >= 0, "task.filler_rate", self.filler_rate, "a number >= 0")
        check_word_supply(max(self.pairs), "task.pairs", self.pairs, self.key_vocab,
                          self.min_key_len, self.max_key_len, "keys", "key_vocab and key lengths")
        for n, length in zip(self.pairs, self.lengths):
            need = 1 + 2 * n * (self.max_key_len + int(self.delimiter) + 1)
            check(length == 0 or length >= need, "task.lengths", self.lengths,
                  f"0 or at least {need} tokens for {n} pairs with the longest keys")


class Mqar(Task):
    Config = MqarConfig
    primary_metric = "acc"

    def __init__(self, cfg: MqarConfig):
        super().__init__(cfg)
        self._value_ids = [self.vocab[f"val{i}"] for i in range(cfg.value_vocab)]

    def longer(self, scale: float) -> MqarConfig:
        """s × the pairs (and the padded length) of every setting, s × the context."""
        c = self.cfg
        return self.scaled_context(scale, pairs=[max(1, round(n * scale)) for n in c.pairs],
                                   lengths=[round(n * scale) for n in c.lengths])

    def build_vocab(self) -> Vocab:
        c = self.cfg
        pieces = [f"k{i}" for i in range(c.key_vocab)] + [f"val{i}" for i in range(c.value_vocab)]
        pieces += [f"f{i}" for i in range(c.filler_vocab)]
        pieces += [f"<L{n}>" for n in range(1, 4)] if c.delimiter else []
        return Vocab(pieces)

    def _filler_cap(self, n: int) -> int:
        """Most fillers an example with n pairs and length 0 may hold: the Poisson mean + 6 sd
        (draws beyond it are clipped, so ``max_length`` is a true bound)."""
        lam = (2 * n - 1) * self.cfg.filler_rate
        return int(lam + 6 * np.sqrt(lam)) + 6 if lam else 0

    def max_length(self) -> int:
        c = self.cfg
        return max(length
                   or 1 + 2 * n * (c.max_key_len + int(c.delimiter) + 1) + self._filler_cap(n)
                   for n, length in zip(c.pairs, c.lengths))

    def _keys(self, rng: np.random.Generator, n: int) -> list[tuple[int, ...]]:
        """n distinct keys (token-id tuples), drawn in bulk."""
        c, k0 = self.cfg, self.vocab["k0"]
        return distinct_words(rng, n, c.min_key_len, c.max_key_len, c.key_vocab, 4,
                              lambda size, row: tuple(k0 + s for s in row[:size]))

    def _filler_counts(self, rng: np.random.Generator, n: int, length: int, used: int) -> list[int]:
        """Fillers before each of the pairs 1..2n-1 (none before the first)."""
        c = self.cfg
        open_gaps = np.arange(1, 2 * n) >= (n if c.filler_gaps == "queries" else 1)
        counts = np.zeros(2 * n - 1, dtype=np.int64)
        if length:
            counts[open_gaps] = rng.multinomial(length - used,
                                                [1 / open_gaps.sum()] * open_gaps.sum())
        elif c.filler_rate:
            counts[open_gaps] = rng.poisson(c.filler_rate, size=int(open_gaps.sum()))
            while counts.sum() > self._filler_cap(n):
                counts[counts.argmax()] -= 1
        return [0] + counts.tolist()

    def example(self, split: str, index: int, meta: bool = True) -> Example:
        c, v = self.cfg, self.vocab
        if split == "train" and c.train_examples:
            index %= c.train_examples
        rng = rng_for(c.seed, split, index)
        setting = (int(rng.integers(len(c.pairs))) if split == "train"
                   else c.eval_setting % len(c.pairs))
        n, length = c.pairs[setting], c.lengths[setting]
        keys, values = self._keys(rng, n), rng.integers(0, c.value_vocab, size=n).tolist()
        order = rng.permutation(n).tolist() + rng.permutation(n).tolist()
        delim = [(v[f"<L{len(k)}>"],) if c.delimiter else () for k in keys]
        used = 1 + 2 * sum(len(k) + len(d) + 1 for k, d in zip(keys, delim))
        fillers = self._filler_counts(rng, n, length, used)
        filler_ids = (v["f0"] + rng.integers(0, c.filler_vocab, size=sum(fillers))).tolist()
        tokens, targets, f = [v.bos], [], 0
        for j, (i, gap) in enumerate(zip(order, fillers)):
            tokens += filler_ids[f : f + gap]
            f += gap
            tokens += keys[i] + delim[i]
            if j >= n:
                targets.append((len(tokens), len(keys[i])))
            tokens.append(self._value_ids[values[i]])
        mask = np.zeros(len(tokens), bool)
        mask[[t for t, _ in targets]] = True
        info = {"pairs": [{"key": v.decode(k), "value": f"val{x}"} for k, x in zip(keys, values)],
                "setting": setting,
                "spans": [{"start": t, "end": t + 1, "key_len": kl}
                          for t, kl in targets]} if meta else {}
        return Example(np.asarray(tokens, np.int32), mask, info)

    def evaluate(self, model, examples: list[Example], batch_size: int = 64) -> dict[str, float]:
        preds = teacher_forced_predictions(model, examples, self.vocab.pad, batch_size)
        out = span_accuracy(examples, preds, "key_len")
        return {k: val for k, val in out.items() if not k.startswith("tok_acc")}

    def question_counts(self) -> dict[str, int]:
        """Queried keys, overall and per key length (``acc_key_len<n>``)."""
        return span_counts(self.eval_examples(), "key_len")

    def chance(self, metric: str) -> float | None:
        """1/value_vocab for an accuracy: the answer is one of the value tokens."""
        return 1.0 / self.cfg.value_vocab if metric.startswith("acc") else None

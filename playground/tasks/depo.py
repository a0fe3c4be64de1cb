"""Depo: reasoning depth. k-hop lookups along one directed cycle of n random words.

Layout: ``<bos> x1 y1 … xn yn <query_k> q <ans> a …`` — the n edges ``x y`` of the cycle
w0→w1→…→w(n-1)→w0 in shuffled order, then min(n, 10) distinct queries; ``a`` is the k-th
successor of ``q``. A word is 1..L symbols: ``min_len-1..max_len-1`` inner symbols ``c*`` and one
end-of-word symbol ``e*`` (so word boundaries are visible). Loss on ``<ans>`` and the answer.

A decoded example (``playground-data show task=depo1 task.N=4 task.K=2 task.V=3``, eval
split, first two queries; targets in brackets)::

    <bos> c1 e0 c2 e0 c2 e0 c0 e2 c0 e2 c2 e1 c2 e1 c1 e0
    <query_1> c1 e0 [<ans>] [c2] [e0] <query_2> c2 e0 [<ans>] [c2] [e1] …

Training samples n ∈ {3..N} with P(n) ∝ 1/(n + √N) and k ~ U[1, K]; eval uses n = N and spreads
k evenly over 1..K. Facts: ../shared/TASKS.md (Depo).

Metrics: ``acc_k{k}`` (whole-answer exact match at k hops) and ``tok_acc_k{k}``; the paper's
cell ``acc_at_K`` / ``acc_at_K2``; and ``depth_reached``, the largest k whose accuracy is at
least DEPTH_BAR and all smaller k's too (0 if one hop is not learned): a measure of the skill
that still moves when ``acc_at_K`` sits at chance, as it does at small budgets. The bar is well
above the one-hop plateau: copying the value after a random occurrence of the key scores about
50 % at k = 1, so 50 % would not show that a hop was learned.

Longer form (``Task.at_length``, length-generalisation eval): at scale s the cycle has s × N
words at the same K and the context is s × longer; the vocabulary (K queries, V symbols) is
unchanged, so the edges to search through are s × as many at the same depth.

Packing (``data.packing=auto``): ``aligned``. An example is one independent question–answer
document; cut by a window edge, its queries would lose the edges they are answered from (the
answer must not be cut from its question).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from playground.errors import check
from playground.tasks.base import (
    DifficultyLaw,
    Example,
    ExampleBuilder,
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


@dataclass
class DepoConfig(TaskConfig):
    name: str = "depo"
    preset: str = "depo1"
    N: int = 225  # most words in a cycle; eval uses n = N
    K: int = 8  # most hops; train k ~ U[1, K]
    V: int = 50  # inner symbols, and as many end-of-word symbols
    min_len: int = 1  # word length range (symbols, end symbol included)
    max_len: int = 2
    n_min: int = 3  # smallest training n
    queries: int = 10  # queries per example: min(n, queries)

    difficulty_keys: ClassVar[tuple[str, ...]] = ("N", "K")

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.V >= 1, "task.V", self.V, "an integer >= 1")
        check(1 <= self.min_len <= self.max_len, "task.min_len", self.min_len,
              f"1 <= min_len <= max_len (max_len={self.max_len})")
        check(3 <= self.n_min <= self.N, "task.n_min", self.n_min, f"3 <= n_min <= N (N={self.N})")
        check(1 <= self.K <= self.N, "task.K", self.K, f"an integer in [1, N={self.N}]")
        check(self.queries >= 1, "task.queries", self.queries, "an integer >= 1")
        check_word_supply(self.N, "task.N", self.N, self.V, self.min_len, self.max_len, "words",
                          "V, min_len, max_len")

    def panel(self) -> str:
        """The paper's panel: the family of the preset and K (``depo1_K8``); rows are N."""
        return f"{self.preset.split('_')[0]}_K{self.K}"


class Depo(Task):
    Config = DepoConfig
    primary_metric = "acc_at_K"
    secondary_metric = "acc_at_K2"
    depth_metric = "acc_k"

    def __init__(self, cfg: DepoConfig):
        super().__init__(cfg)
        self._law = DifficultyLaw(cfg.n_min, cfg.N)

    def longer(self, scale: float) -> DepoConfig:
        """s × N words per cycle at the same K, s × the context."""
        return self.scaled_context(scale, N=max(3, round(self.cfg.N * scale)))

    def build_vocab(self) -> Vocab:
        c = self.cfg
        queries = [f"<query_{k}>" for k in range(1, c.K + 1)]
        return Vocab(queries + [f"c{i}" for i in range(c.V)] + [f"e{i}" for i in range(c.V)])

    def max_length(self) -> int:
        c = self.cfg
        return 1 + 2 * c.N * c.max_len + min(c.N, c.queries) * (2 + 2 * c.max_len)

    def _words(self, rng: np.random.Generator, n: int) -> list[tuple[int, ...]]:
        """n distinct random words as token-id tuples, in the random order they were drawn."""
        c, v = self.cfg, self.vocab
        inner, end = v["c0"], v["e0"]
        return distinct_words(rng, n, c.min_len, c.max_len, c.V, 8,
                              lambda length, row: (*(inner + s for s in row[: length - 1]),
                                                   end + row[-1]))

    def example(self, split: str, index: int, meta: bool = True) -> Example:
        c, v = self.cfg, self.vocab
        rng = rng_for(c.seed, split, index)
        n = self._law.sample(rng) if split == "train" else c.N
        cycle = self._words(rng, n)  # cycle[i] -> cycle[(i + 1) % n]
        b = ExampleBuilder()
        b.add([v.bos])
        for i in rng.permutation(n).tolist():
            b.add(cycle[i] + cycle[(i + 1) % n])
        nq = min(n, c.queries)
        starts = rng.choice(n, size=nq, replace=False).tolist()
        if split == "train":
            ks = rng.integers(1, c.K + 1, size=nq).tolist()
        else:  # spread k evenly over 1..K across the eval set
            ks = [1 + (index * nq + j) % c.K for j in range(nq)]
        queries, spans = [], []
        for q, k in zip(starts, ks):
            answer = cycle[(q + k) % n]
            b.add([v[f"<query_{k}>"], *cycle[q]])
            b.add([v.ans], target=True)
            start, end = b.add(answer, target=True)
            if meta:
                spans.append({"start": start, "end": end, "k": k})
                queries.append({"k": k, "query": v.decode(cycle[q]), "answer": v.decode(answer)})
        if not meta:
            return b.build({})
        return b.build({"n": n, "cycle": [v.decode(w) for w in cycle], "queries": queries,
                        "spans": spans})

    def evaluate(self, model, examples: list[Example], batch_size: int = 64) -> dict[str, float]:
        preds = teacher_forced_predictions(model, examples, self.vocab.pad, batch_size)
        out = span_accuracy(examples, preds, "k")
        K = self.cfg.K
        out["acc_at_K"] = out.get(f"acc_k{K}", float("nan"))
        if K >= 2:
            out["acc_at_K2"] = out.get(f"acc_k{K // 2}", float("nan"))
        out["depth_reached"] = float(depth_reached([out.get(f"acc_k{k}", 0.0)
                                                    for k in range(1, K + 1)]))
        return out

    def question_counts(self) -> dict[str, int]:
        """Queries per hop count k (``acc_k<k>``), and at k = K and K/2."""
        out = span_counts(self.eval_examples(), "k")
        K = self.cfg.K
        out["acc_at_K"] = out.get(f"acc_k{K}", 0)
        if K >= 2:
            out["acc_at_K2"] = out.get(f"acc_k{K // 2}", 0)
        return out

    def chance(self, metric: str) -> float | None:
        """1/N for an accuracy: the answer is one of the eval cycle's N words."""
        return 1.0 / self.cfg.N if "acc" in metric else None


DEPTH_BAR = 0.75  # depth_reached: the accuracy a hop count must reach to count as learned


def depth_reached(acc_by_k: list[float]) -> int:
    """The number of leading hop counts (k = 1, 2, …) whose accuracy is at least DEPTH_BAR."""
    depth = 0
    while depth < len(acc_by_k) and acc_by_k[depth] >= DEPTH_BAR:
        depth += 1
    return depth

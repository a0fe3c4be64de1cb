"""Exact parse counts and exact next-token probabilities (inside + prefix probabilities).

Both run one sparse dynamic program over the feasible spans, in exact arithmetic with plain
Python integers:

* **inside**: ``val[i][a][s][e]`` = weight of all derivations of ``x[s:e]`` from symbol a of
  level i, filled level by level bottom-up, sharing common rule prefixes (as the recognizer).
  Counting parses uses weight 1 per rule.
* **probabilities** use the integer encoding ``val = P(a =>* x[s:e]) * M**(e-s-1)`` with M the
  lcm of the rules-per-symbol counts: a rule ``a -> c1..ck`` weighs ``M**(k-1) / n_a`` (an
  integer), and since every tree with w leaves and rules of length >= 2 satisfies
  sum over nodes of (k-1) = w-1, all derivations of a span share the denominator M**(w-1).
* **forward (prefix) weights** ``fw[i][a][s]`` = total probability of partial derivations from
  the root that generate exactly ``x[0:s]`` as complete subtrees left of a predicted level-i
  node a starting at s, scaled by ``M**(s + i*(K-1))`` (K = the longest rule). Then
  ``fw[depth][b][t]`` is the prefix probability of ``x[0:t] b`` and ``val[0][start][0][t]``
  the probability that the sentence is exactly ``x[0:t]``; their sum is the prefix
  probability of ``x[0:t]``, so the next-symbol distribution is an exact ratio of integers.

Grammars with unary rules fall back to ``fractions.Fraction`` weights (same code, M = 1).
Floats appear only at the very end, as correctly rounded quotients of exact numbers, so nothing
underflows however long the sentence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from playground.grammar.model import Grammar
from playground.grammar.recognizer import terminal_indices

Row = dict[int, int]  # end -> value
Spans = dict[int, Row]  # start -> row


class Weights:
    """Rule weights of the integer encoding (or Fractions when a rule is unary)."""

    def __init__(self, g: Grammar, counting: bool = False):
        self.counting = counting
        self.K = max(len(r) for lv in g.rules for rules in lv for r in rules)
        exact_int = counting or min(len(r) for lv in g.rules for rules in lv for r in rules) >= 2
        self.M = (1 if counting or not exact_int
                  else math.lcm(*(int(n) for lv in g.n_rules for n in lv)))
        self.fraction = not exact_int
        # inside[i][a][r]: weight of rule r of symbol a (level i)
        self.inside = [[[self._inside(len(rules), len(r)) for r in rules] for rules in lv]
                       for lv in g.rules]

    def _inside(self, n: int, k: int):
        if self.counting:
            return 1
        if self.fraction:
            return Fraction(1, n)
        return self.M ** (k - 1) // n

    def forward(self, n: int, j: int):
        """Weight of a spine node with n rules whose predicted child is the j-th (1-based)."""
        if self.fraction:
            return Fraction(1, n)
        return self.M ** (self.K - 2 + j) // n


def _extend(left: Spans, right: Spans) -> Spans:
    """Sequence product: out[s][e] = sum over m of left[s][m] * right[m][e]."""
    out: Spans = {}
    for s, row in left.items():
        acc: Row = {}
        for m, v in row.items():
            for e, w in right.get(m, {}).items():
                acc[e] = acc.get(e, 0) + v * w
        if acc:
            out[s] = acc
    return out


def inside_chart(g: Grammar, x: Sequence[int], weights: Weights,
                 root_starts=(0,)) -> list[list[Spans]]:
    """``val[i][a][s][e]`` for terminal indices x (see the module docstring)."""
    val: list[list[Spans]] = [[] for _ in range(g.depth + 1)]
    val[g.depth] = [{} for _ in g.terminals]
    for s, b in enumerate(x):
        val[g.depth][b][s] = {s + 1: 1}
    for i in range(g.depth - 1, -1, -1):
        memo: dict[tuple[int, ...], Spans] = {}
        starts = root_starts if i == 0 else None
        level = []
        for a, rules in enumerate(g.rules[i]):
            merged: Spans = {}
            for rule, w in zip(rules, weights.inside[i][a]):
                for s, row in _sequence(rule, val[i + 1], memo, starts).items():
                    dst = merged.setdefault(s, {})
                    for e, v in row.items():
                        dst[e] = dst.get(e, 0) + w * v
            level.append(merged)
        val[i] = level
    return val


def _sequence(rule: tuple[int, ...], below: list[Spans], memo: dict, starts) -> Spans:
    got = memo.get(rule)
    if got is None:
        if len(rule) == 1:
            got = below[rule[0]]
            if starts is not None:
                got = {s: got[s] for s in starts if s in got}
        else:
            got = _extend(_sequence(rule[:-1], below, memo, starts), below[rule[-1]])
        memo[rule] = got
    return got


def count_parses(g: Grammar, sentence: Sequence[int]) -> int:
    """The exact number of parse trees of ``sentence`` (0 if it is not in the language)."""
    x = terminal_indices(g, sentence)
    if not x:
        return 0
    val = inside_chart(g, x, Weights(g, counting=True))
    return val[0][0].get(0, {}).get(len(x), 0)


def inside_probability(g: Grammar, sentence: Sequence[int]) -> Fraction:
    """P(sentence) under uniform rule choice, exactly."""
    x = terminal_indices(g, sentence)
    if not x:
        return Fraction(0)
    w = Weights(g)
    value = inside_chart(g, x, w)[0][0].get(0, {}).get(len(x), 0)
    return Fraction(value) / w.M ** (len(x) - 1)


def forward_weights(g: Grammar, val: list[list[Spans]], w: Weights) -> list[Row]:
    """``fw[b][t]`` for every terminal index b and position t (see the module docstring)."""
    fw: list[dict[int, int]] = [{0: 1}]  # level 0: the start symbol, predicted at 0
    for i in range(g.depth):
        nxt: list[Row] = [{} for _ in g.symbols[i + 1]]
        for a, rules in enumerate(g.rules[i]):
            if fw[a]:
                _predict(rules, fw[a], val[i + 1], w, len(rules), nxt)
        fw = nxt
    return fw


def _predict(rules, here: Row, below: list[Spans], w: Weights, n: int, out: list[Row]) -> None:
    """Add the predictions of every child of every rule of one symbol with forward row ``here``."""
    memo: dict[tuple[int, ...], Row] = {(): here}
    for rule in rules:
        for j, c in enumerate(rule):
            ctx = _consumed(rule[:j], below, memo)  # complete left siblings: position -> weight
            coef = w.forward(n, j + 1)
            dst = out[c]
            for s, v in ctx.items():
                dst[s] = dst.get(s, 0) + coef * v


def _consumed(prefix: tuple[int, ...], below: list[Spans], memo: dict) -> Row:
    got = memo.get(prefix)
    if got is None:
        acc: Row = {}
        for m, v in _consumed(prefix[:-1], below, memo).items():
            for e, u in below[prefix[-1]].get(m, {}).items():
                acc[e] = acc.get(e, 0) + v * u
        memo[prefix] = got = acc
    return got


def next_symbol_weights(g: Grammar, sentence: Sequence[int]) -> list[list[int]]:
    """Unnormalised exact next-symbol weights after every prefix ``x[0:t]``, t = 0..L:
    row t = [end, terminal 0, terminal 1, ...]; the row sums to the prefix probability of
    ``x[0:t]`` times a common scale, so ratios within a row are exact probabilities."""
    x = terminal_indices(g, sentence)
    if x is None:
        g.encode(sentence)  # raises a GrammarError naming the symbol
    w = Weights(g)
    val = inside_chart(g, x, w)
    fw = forward_weights(g, val, w)
    ends = val[0][0].get(0, {})
    lift = w.M ** (g.depth * (w.K - 1) + 1)  # brings inside's M**(t-1) to fw's M**(t + D(K-1))
    return [[ends.get(t, 0) * lift] + [fw[b].get(t, 0) for b in range(len(g.terminals))]
            for t in range(len(x) + 1)]


def next_symbol_probs(g: Grammar, sentence: Sequence[int], exact: bool = False):
    """The true next-symbol distribution after every prefix ``x[0:t]``, t = 0..len(sentence):
    float64[L+1, 1+T] with columns [end, terminals...] (rows of impossible prefixes are NaN),
    or, with ``exact=True``, lists of Fractions (rows of impossible prefixes are None)."""
    rows = next_symbol_weights(g, sentence)
    if exact:
        return [[Fraction(v) / sum(r) for v in r] if any(r) else None for r in rows]
    out = np.full((len(rows), len(g.terminals) + 1), np.nan)
    for t, r in enumerate(rows):
        total = sum(r)
        if total:
            out[t] = [v / total for v in r]  # int / int is correctly rounded however large
    return out


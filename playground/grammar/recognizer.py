"""Exact recognition of layered-grammar sentences with a level-by-level bitset chart.

Because every rule of a level-i symbol produces level-(i+1) symbols and all leaves sit at depth
``depth``, the chart is filled one level at a time, bottom-up: ``ends[i][a]`` maps a start
position s to a bitmask (a Python int) whose bit e is set iff symbol a of level i derives
``x[s:e]``. A rule ``a -> c1 c2 c3`` composes masks: the ends reachable from s through c1, then
from each of those through c2, and so on — one big-int OR per intermediate boundary. Rules that
share a prefix of children share its composition. Only non-empty masks are stored, so the work
is proportional to the number of feasible (symbol, span) pairs, which for the cfg3 grammars is
about the sentence length per level (see docs/grammar.md). The root level is only evaluated at
start 0.

Public API: ``accepts``, ``accepts_many`` (several processes), ``parse`` (one parse tree) and
``count_parses`` (exact, in ``playground.grammar.inside``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor

from playground.grammar.model import Grammar, Tree

Masks = dict[int, int]  # start -> bitmask of ends


def bit_positions(mask: int) -> Iterator[int]:
    """Positions of the set bits of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def terminal_indices(g: Grammar, sentence: Sequence[int]) -> list[int] | None:
    """Terminal indices of ``sentence``, or None if it holds a symbol that is not a terminal."""
    index = g.index[g.depth]
    out = []
    for t in sentence:
        k = index.get(int(t))
        if k is None:
            return None
        out.append(k)
    return out


def compose(left: Masks, right: Masks) -> Masks:
    """Sequence composition: bit e of result[s] is set iff some m has e in right[m],
    m in left[s]."""
    out: Masks = {}
    for s, mask in left.items():
        acc = 0
        for m in bit_positions(mask):
            acc |= right.get(m, 0)
        if acc:
            out[s] = acc
    return out


def build_chart(g: Grammar, x: Sequence[int],
                root_starts: Sequence[int] | None = (0,)) -> list[list[Masks]]:
    """The bitset chart of terminal indices ``x``: ``chart[i][a][s]`` = mask of ends (see the
    module docstring). ``root_starts`` limits the level-0 starts (None: all)."""
    chart: list[list[Masks]] = [[] for _ in range(g.depth + 1)]
    chart[g.depth] = [{} for _ in g.terminals]
    for s, b in enumerate(x):
        chart[g.depth][b][s] = 1 << (s + 1)
    for i in range(g.depth - 1, -1, -1):
        below = chart[i + 1]
        memo: dict[tuple[int, ...], Masks] = {}
        level = []
        for rules in g.rules[i]:
            merged: Masks = {}
            for rule in rules:
                for s, mask in _rule_masks(rule, below, memo, i, root_starts).items():
                    merged[s] = merged.get(s, 0) | mask
            level.append(merged)
        chart[i] = level
    return chart


def _rule_masks(rule: tuple[int, ...], below: list[Masks], memo: dict, level: int,
                root_starts: Sequence[int] | None) -> Masks:
    """Masks of the rule's children sequence, memoised on every prefix of it."""
    got = memo.get(rule)
    if got is not None:
        return got
    if len(rule) == 1:
        got = below[rule[0]]
        if level == 0 and root_starts is not None:
            got = {s: got[s] for s in root_starts if s in got}
    else:
        got = compose(_rule_masks(rule[:-1], below, memo, level, root_starts), below[rule[-1]])
    memo[rule] = got
    return got


def accepts(g: Grammar, sentence: Sequence[int]) -> bool:
    """True iff the grammar derives ``sentence`` (terminal symbols); False for unknown symbols."""
    x = terminal_indices(g, sentence)
    if not x:
        return False
    chart = build_chart(g, x)
    return bool(chart[0][0].get(0, 0) >> len(x) & 1)


def _accepts_chunk(args: tuple[Grammar, list[list[int]]]) -> list[bool]:
    g, sentences = args
    return [accepts(g, s) for s in sentences]


def accepts_many(g: Grammar, sentences: Sequence[Sequence[int]], workers: int = 1,
                 chunk: int = 64) -> list[bool]:
    """``accepts`` for many sentences, in ``workers`` processes (1: in this process)."""
    lists = [[int(t) for t in s] for s in sentences]
    if workers <= 1 or len(lists) <= chunk:
        return [accepts(g, s) for s in lists]
    parts = [(g, lists[k : k + chunk]) for k in range(0, len(lists), chunk)]
    with ProcessPoolExecutor(workers) as pool:
        return [ok for part in pool.map(_accepts_chunk, parts) for ok in part]


def parse(g: Grammar, sentence: Sequence[int]) -> Tree | None:
    """One parse tree of ``sentence`` (the first rule and split in grammar order), or None."""
    x = terminal_indices(g, sentence)
    if not x:
        return None
    chart = build_chart(g, x)
    if not chart[0][0].get(0, 0) >> len(x) & 1:
        return None
    return _build(g, chart, 0, 0, 0, len(x))


def _build(g: Grammar, chart: list[list[Masks]], i: int, a: int, s: int, e: int) -> Tree:
    """A tree for symbol a of level i over [s, e), which the chart says exists."""
    if i == g.depth:
        return g.terminals[a]
    for rule in g.rules[i][a]:
        bounds = _split(chart[i + 1], rule, s, e)
        if bounds is not None:
            kids = tuple(_build(g, chart, i + 1, c, lo, hi)
                         for c, lo, hi in zip(rule, bounds[:-1], bounds[1:]))
            return (g.symbols[i][a], kids)
    raise AssertionError("the chart promised a derivation that does not exist")


def _split(below: list[Masks], rule: tuple[int, ...], s: int, e: int) -> list[int] | None:
    """Boundaries [s, m1, ..., e] with child k of ``rule`` deriving [m_k, m_{k+1}), or None."""
    if len(rule) == 1:
        return [s, e] if below[rule[0]].get(s, 0) >> e & 1 else None
    for m in bit_positions(below[rule[0]].get(s, 0)):
        if m < e:
            rest = _split(below, rule[1:], m, e)
            if rest is not None:
                return [s, *rest]
    return None

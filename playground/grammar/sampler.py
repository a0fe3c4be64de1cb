"""Sampling sentences from a layered grammar with uniform rule choice.

The expansion runs level by level: the level-i frontier (a left-to-right array of level-i
symbols) draws one rule per symbol in a single vectorised call, and the concatenated right-hand
sides form the level-(i+1) frontier. The sentence is the frontier at level ``depth``. The draws
are a pure function of the generator's state, so ``rng_for(seed, split, index)`` makes a
sentence reproducible.
"""

from __future__ import annotations

import numpy as np

from playground.grammar.model import Grammar, Tree


def _expand(g: Grammar, rng: np.random.Generator) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """frontiers[i]: level-i symbol indices left to right; choices[i]: the rule each one took."""
    frontier = np.zeros(1, np.int64)
    frontiers, choices = [frontier], []
    for i in range(g.depth):
        choice = rng.integers(0, g.n_rules[i][frontier])  # uniform rule per symbol
        kids = g.rule_children[i][frontier, choice]  # [n, width]
        frontier = kids[kids >= 0]
        choices.append(choice)
        frontiers.append(frontier)
    return frontiers, choices


def sample_levels(g: Grammar, rng: np.random.Generator) -> list[np.ndarray]:
    """The symbols of every level of one sampled tree, left to right (int64 arrays; the last
    one is the sentence as terminal symbols). Draws exactly what ``sample`` draws."""
    frontiers, _ = _expand(g, rng)
    return [np.asarray(syms, np.int64)[f] for syms, f in zip(g.symbols, frontiers)]


def sample(g: Grammar, rng: np.random.Generator) -> np.ndarray:
    """One sentence: int64[L] of terminal symbols."""
    frontiers, _ = _expand(g, rng)
    return np.asarray(g.terminals, np.int64)[frontiers[-1]]


def sample_with_tree(g: Grammar, rng: np.random.Generator) -> tuple[np.ndarray, Tree]:
    """One sentence and its parse tree (``(symbol, children)`` tuples, terminals as leaves).
    Draws exactly what ``sample`` draws, so the same generator state gives the same sentence."""
    frontiers, choices = _expand(g, rng)
    nodes: list[Tree] = [g.terminals[k] for k in frontiers[-1].tolist()]
    for i in range(g.depth - 1, -1, -1):
        lengths = g.rule_lengths[i][frontiers[i], choices[i]]
        ends = np.cumsum(lengths).tolist()
        starts = [0, *ends[:-1]]
        syms = [g.symbols[i][a] for a in frontiers[i].tolist()]
        nodes = [(s, tuple(nodes[lo:hi])) for s, lo, hi in zip(syms, starts, ends)]
    sentence = np.asarray(g.terminals, np.int64)[frontiers[-1]]
    return sentence, nodes[0]

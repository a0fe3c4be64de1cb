"""Sampling sentences from a layered grammar with uniform rule choice.

The expansion runs level by level: the level-i frontier (a left-to-right array of level-i
symbols) draws one rule per symbol, and the concatenated right-hand sides form the
level-(i+1) frontier. The sentence is the frontier at level ``depth``. The draws are a pure
function of the generator's state, so ``rng_for(seed, split, index)`` makes a sentence
reproducible.

The draws are defined as ``rng.integers(0, n_rules[frontier])`` per level, the way the data was
first made, and are kept word for word: :func:`draw_rules` applies numpy's rule to the same
32-bit words of the generator, read in bulk (:class:`Words`), and leaves the generator where
``integers`` would. numpy's own call, with bounds given as an array, loops element by element
behind about 10 µs of Python-level checks per level, most of a sentence's cost. The training
stream goes further (:func:`sample_many`): the sentences of a shard, each from its own
generator, are expanded together, one set of array operations per level for all of them.
``tests/test_grammar_sampler.py`` compares both with the definition over many seeds and
grammars, and pins Lano's data. Rates: docs/PERFORMANCE.md ("Data parallel").
"""

from __future__ import annotations

import math
import sys

import numpy as np

from playground.grammar.model import Grammar, Tree

WORD = 1 << 32  # a rule draw reads 32-bit words of the generator
LOW, SHIFT = np.uint64(WORD - 1), np.uint64(32)
READ_AHEAD = 256  # 64-bit outputs Words reads at once: a cfg3f sentence uses about 80


def halves(raw: np.ndarray) -> np.ndarray:
    """64-bit outputs [..., R] -> the 32-bit words numpy reads from them [..., 2R] (uint32):
    the low half first (on a little-endian machine, the outputs' own memory)."""
    if sys.byteorder == "little":
        return raw.view(np.uint32)
    return np.stack([raw & LOW, raw >> SHIFT], -1).reshape(*raw.shape[:-1], -1).astype(np.uint32)


def rewind(bitgen: np.random.BitGenerator, start: dict, taken: int, last: int, after: int) -> None:
    """Set ``bitgen`` (read ahead) to where ``integers`` leaves it after drawing ``taken`` words
    from state ``start``, ``last`` the last of them and ``after`` the word that follows: the
    outputs they came from drawn; when the last one's high half was not taken, that half held
    for the next ``next_uint32`` (else numpy keeps the last half-word it handed out, unheld)."""
    held = int(start["has_uint32"])
    bitgen.state = start
    fresh = max(0, taken - held)  # words taken from new outputs
    if fresh:
        bitgen.advance(-(-fresh // 2))
    if taken:
        state = bitgen.state
        state.update(has_uint32=fresh % 2, uinteger=int(after if fresh % 2 else last))
        bitgen.state = state


class Words:
    """The 32-bit words ``rng.integers`` reads next (numpy's ``next_uint32``: a half-word held
    by the bit generator first, then the low and the high half of each 64-bit output), read
    ahead in bulk with ``random_raw``. Use as a context manager: on leaving, the generator is
    set to where it would be had only the words taken been drawn (:func:`rewind`)."""

    def __init__(self, rng: np.random.Generator):
        self.bitgen = rng.bit_generator
        self.start = self.bitgen.state
        held = [self.start["uinteger"]] if self.start["has_uint32"] else []
        self.words = np.array(held, np.uint32)  # read, not yet taken
        self.taken, self.last = 0, 0

    def take(self, count: int) -> np.ndarray:
        """The next ``count`` words (uint32)."""
        if count > len(self.words):
            outputs = max(READ_AHEAD, -(-(count - len(self.words)) // 2))
            self.words = np.concatenate([self.words, halves(self.bitgen.random_raw(outputs))])
        out, self.words = self.words[:count], self.words[count:]
        self.taken += count
        self.last = int(out[-1]) if count else self.last
        return out

    def take_one(self) -> int:
        return int(self.take(1)[0])

    def __enter__(self) -> Words:
        return self

    def __exit__(self, *_) -> None:
        after = self.words[0] if len(self.words) else 0
        rewind(self.bitgen, self.start, self.taken, self.last, after)


def draw_rules(n: np.ndarray, words: Words) -> np.ndarray:
    """``rng.integers(0, n)`` for an int64 array ``n`` of rule counts (1 <= n < 2**32), from
    the same words of the generator.

    numpy draws element by element: nothing for n = 1 (rule 0), else Lemire's method on one
    word w: rule (w·n) >> 32, unless (w·n) mod 2**32 < 2**32 mod n, when w is rejected and the
    next word tried (for n = 3 only w = 0; never for a power of two). Here every element takes
    its word at once; only a possible rejection, (w·n) mod 2**32 < n (about once in 10⁹ draws
    for a grammar's rule counts), is checked exactly and, if real, finishes the level element
    by element (:func:`_draw_rules_from`)."""
    live = n > 1
    count = int(np.count_nonzero(live))
    every = count == len(n)
    counts = (n if every else n[live]).astype(np.uint64)
    words_read = words.take(count)
    scaled = words_read * counts  # < 2**64
    suspect = (scaled & LOW) < counts
    if np.count_nonzero(suspect):
        rejected = (scaled & LOW) < np.uint64(WORD) % counts
        if np.count_nonzero(rejected):
            first = int(np.argmax(rejected))
            scaled[first:] = _draw_rules_from(counts[first:], words_read[first + 1 :], words)
    rules = (scaled >> SHIFT).astype(np.int64)
    if every:
        return rules
    out = np.zeros(len(n), np.int64)
    out[live] = rules
    return out


def _draw_rules_from(counts: np.ndarray, after: np.ndarray, words: Words) -> list[int]:
    """Lemire's scaled words (w·n) for ``counts`` one by one, from the first one's (rejected)
    word on: the words already taken (``after`` it) first, then the next ones."""
    pending = after.tolist()
    out = []
    for n in counts.tolist():
        while True:
            w = pending.pop(0) if pending else words.take_one()
            if (w * n) % WORD >= WORD % n:
                break
        out.append(w * n)
    return out


def _expand(g: Grammar, rng: np.random.Generator) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """frontiers[i]: level-i symbol indices left to right; choices[i]: the rule each one took."""
    frontier = np.zeros(1, np.int64)
    frontiers, choices = [frontier], []
    with Words(rng) as words:
        for i in range(g.depth):
            choice = draw_rules(g.n_rules[i][frontier], words)  # uniform rule per symbol
            kids = g.rule_children[i][frontier, choice]  # [n, width]
            frontier = kids[kids >= 0]
            choices.append(choice)
            frontiers.append(frontier)
    return frontiers, choices


def sample_frontiers(g: Grammar, rng: np.random.Generator) -> list[np.ndarray]:
    """The symbol indices of every level of one sampled tree, left to right: level i into
    ``g.symbols[i]``, the last level into ``g.terminals``. The cheapest form of a sample;
    draws exactly what ``sample`` draws."""
    return _expand(g, rng)[0]


def sample_many(g: Grammar, rngs: list[np.random.Generator]) -> list[list[np.ndarray]]:
    """:func:`sample_frontiers` for each generator, the same draws, but the sentences expanded
    together: each level's rule draws for all of them are one set of array operations on
    words read ahead (:func:`read_width` a sentence), instead of a dozen small ones per
    sentence. The generators are used up: read ahead, their state afterwards is not the one
    ``sample_frontiers`` leaves. A sentence that needs more words, meets a rejection
    (:func:`draw_rules`) or whose generator holds a half-word is sampled again on its own."""
    if not rngs:
        return []
    starts = [r.bit_generator.state for r in rngs]
    outputs = read_width(g) // 2
    raw = np.stack([r.bit_generator.random_raw(outputs) for r in rngs])
    levels, owners, redo = _expand_many(g, halves(raw))  # words [S, width]
    out = _by_sentence(levels, owners, len(rngs))
    for k, (rng, start) in enumerate(zip(rngs, starts)):
        if redo[k] or start["has_uint32"]:
            rng.bit_generator.state = start
            out[k] = sample_frontiers(g, rng)
    return out


def read_width(g: Grammar) -> int:
    """Words :func:`sample_many` reads for each sentence: 2.5 × the expected rule draws of a
    sentence (one per symbol with several rules), even. (cfg3f: 400; its longest sentences
    in 3,000 took 286.)"""
    below = np.zeros(len(g.terminals))  # expected draws in the subtree of each level-i symbol
    for i in range(g.depth - 1, -1, -1):
        kids = g.rule_children[i]  # [a, r, width], -1 padded
        subtree = np.where(kids >= 0, below[np.maximum(kids, 0)], 0).sum(2)  # [a, r]
        rules = np.arange(kids.shape[1]) < g.n_rules[i][:, None]
        below = (g.n_rules[i] > 1) + (subtree * rules).sum(1) / g.n_rules[i]
    return 2 * math.ceil(1.25 * below[0])


def _expand_many(g: Grammar, table: np.ndarray):
    """Level by level, the frontiers of all sentences end to end (``owners``: the sentence of
    each symbol); sentence k reads its words from ``table[k]``. Returns the frontiers, their
    owners and which sentences must be redone (words run out, or a rejection)."""
    count, width = table.shape
    frontier, owner = np.zeros(count, np.int64), np.arange(count)
    used, redo = np.zeros(count, np.int64), np.zeros(count, bool)
    levels, owners = [frontier], [owner]
    for i in range(g.depth):
        n = g.n_rules[i][frontier]
        live = np.flatnonzero(n > 1)
        who = owner[live]  # sorted: a sentence's symbols are contiguous
        per = np.bincount(who, minlength=count)
        pos = used[who] + np.arange(len(live)) - (np.cumsum(per) - per)[who]  # word of each draw
        redo[who[pos >= width]] = True
        counts = n[live].astype(np.uint64)
        scaled = table[who, np.minimum(pos, width - 1)] * counts
        suspect = (scaled & LOW) < counts  # necessary for a rejection (draw_rules)
        if np.count_nonzero(suspect):
            redo[who[(scaled & LOW) < np.uint64(WORD) % counts]] = True
        choice = np.zeros(len(frontier), np.int64)
        choice[live] = (scaled >> SHIFT).astype(np.int64)
        used += per
        kids = g.rule_children[i][frontier, choice]  # [n, width]
        keep = kids >= 0
        owner = np.broadcast_to(owner[:, None], kids.shape)[keep]
        frontier = kids[keep]
        levels.append(frontier)
        owners.append(owner)
    return levels, owners, redo


def _by_sentence(levels: list[np.ndarray], owners: list[np.ndarray],
                 count: int) -> list[list[np.ndarray]]:
    """Frontiers end to end per level -> each sentence's frontiers."""
    cuts = [[0, *np.cumsum(np.bincount(o, minlength=count)).tolist()] for o in owners]
    return [[f[c[k] : c[k + 1]] for f, c in zip(levels, cuts)] for k in range(count)]


def sample_levels(g: Grammar, rng: np.random.Generator) -> list[np.ndarray]:
    """The symbols of every level of one sampled tree, left to right (int64 arrays; the last
    one is the sentence as terminal symbols). Draws exactly what ``sample`` draws."""
    return [np.asarray(syms, np.int64)[f] for syms, f in zip(g.symbols, sample_frontiers(g, rng))]


def sample(g: Grammar, rng: np.random.Generator) -> np.ndarray:
    """One sentence: int64[L] of terminal symbols."""
    return np.asarray(g.terminals, np.int64)[sample_frontiers(g, rng)[-1]]


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

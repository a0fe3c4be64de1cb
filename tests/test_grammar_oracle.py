"""Oracle tests of the grammar engine against independent recomputations: nltk's chart parser,
brute-force enumeration of every derivation of small random grammars, and hand-computed toy
grammars. The oracles read the grammar only through its JSON form (``to_dict``)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from nltk.parse.chart import BottomUpLeftCornerChartParser

from playground.grammar import (
    Grammar,
    GrammarError,
    accepts,
    count_parses,
    inside_probability,
    next_symbol_probs,
    parse,
    random_grammar,
    sample,
    tree_leaves,
)

# -- independent oracles ---------------------------------------------------------------------


def rule_table(g: Grammar) -> dict[int, list[tuple[int, ...]]]:
    """symbol -> its rules, read from the JSON form only."""
    return {e["symbol"]: [tuple(r) for r in e["rules"]] for lv in g.to_dict()["levels"] for e in lv}


def tree_count(g: Grammar) -> int:
    """Number of derivation trees of the whole grammar (bounds the brute-force work)."""
    rules, memo = rule_table(g), {}

    def n(sym):
        if sym not in rules:
            return 1
        if sym not in memo:
            memo[sym] = sum(int(np.prod([n(c) for c in r])) for r in rules[sym])
        return memo[sym]

    return n(g.start)


def brute_language(g: Grammar) -> dict[tuple[int, ...], tuple[int, Fraction]]:
    """Every sentence -> (number of derivation trees, probability), by enumerating all trees."""
    rules, memo = rule_table(g), {}

    def yields(sym):
        if sym not in rules:
            return {(sym,): (1, Fraction(1))}
        if sym not in memo:
            out: dict = {}
            for rule in rules[sym]:
                for y, (cy, py) in _combine(rules[sym], rule, yields).items():
                    c0, p0 = out.get(y, (0, Fraction(0)))
                    out[y] = (c0 + cy, p0 + py)
            memo[sym] = out
        return memo[sym]

    return yields(g.start)


def _combine(rules_of_sym, rule, yields) -> dict:
    """Yields of one rule: concatenations of its children's yields, counts and probabilities
    multiplied (different splits giving the same string are summed)."""
    acc: dict = {(): (1, Fraction(1, len(rules_of_sym)))}
    for c in rule:
        nxt: dict = {}
        for y, (cy, py) in acc.items():
            for z, (cz, pz) in yields(c).items():
                c0, p0 = nxt.get(y + z, (0, Fraction(0)))
                nxt[y + z] = (c0 + cy * cz, p0 + py * pz)
        acc = nxt
    return acc


def brute_next(language: dict, prefix: tuple[int, ...], terminals) -> list[Fraction] | None:
    """[P(end), P(t1), ...] after ``prefix`` from the enumerated distribution."""
    k = len(prefix)
    mass = {v: Fraction(0) for v in ["end", *terminals]}
    for y, (_, p) in language.items():
        if y[:k] == prefix:
            mass["end" if len(y) == k else y[k]] += p
    total = sum(mass.values())
    return None if total == 0 else [m / total for m in mass.values()]


def nltk_accepts_and_count(g: Grammar, sentence, count: bool = True) -> tuple[bool, int]:
    cfg = g.to_nltk()
    tokens = [str(t) for t in sentence]
    parser = BottomUpLeftCornerChartParser(cfg)
    try:
        chart = parser.chart_parse(tokens)
    except ValueError:  # nltk refuses words that no rule produces: not in the language
        return False, 0
    ok = any(True for _ in chart.select(start=0, end=len(tokens), is_complete=True,
                                        lhs=cfg.start()))
    return ok, (len(list(chart.parses(cfg.start()))) if count else -1)


def tree_is_valid(g: Grammar, tree, sentence) -> bool:
    """Every node's children spell one of its rules; the leaves are the sentence."""
    rules = rule_table(g)

    def ok(node):
        if not isinstance(node, tuple):
            return node in g.terminals
        sym, kids = node
        labels = tuple(k[0] if isinstance(k, tuple) else k for k in kids)
        return labels in rules.get(sym, []) and all(ok(k) for k in kids)

    return tree[0] == g.start and ok(tree) and tree_leaves(tree) == list(sentence)


def long_sentence(g: Grammar, rng: np.random.Generator, target: int,
                  bias: float = 0.6) -> list[int]:
    """A sentence of about ``target`` tokens (within 3%), longer than uniform sampling gives:
    each node takes its longest rule with probability ``bias``, else a uniform one."""
    rules = rule_table(g)

    def expand(sym):
        if sym not in rules:
            return [sym]
        rs = rules[sym]
        r = max(rs, key=len) if rng.random() < bias else rs[rng.integers(len(rs))]
        return [t for c in r for t in expand(c)]

    for _ in range(10_000):
        s = expand(g.start)
        if abs(len(s) - target) <= 0.03 * target:
            return s
    raise AssertionError(f"no sentence of about {target} tokens")


# -- strategies --------------------------------------------------------------------------------


@st.composite
def small_grammars(draw) -> Grammar:
    depth = draw(st.integers(1, 3))
    lo_r = draw(st.integers(1, 3))
    lo_l = draw(st.integers(1, 2))
    params = dict(
        seed=draw(st.integers(0, 10**6)), depth=depth,
        symbols_per_level=draw(st.integers(1, 3)), terminals=draw(st.integers(1, 3)),
        rules_per_symbol=(lo_r, draw(st.integers(lo_r, 3))),
        rule_length=(lo_l, draw(st.integers(lo_l, 3 if depth < 3 else 2))))
    try:
        g = random_grammar(**params)
    except GrammarError:  # too few distinct rules exist for these parameters
        assume(False)
    assume(tree_count(g) <= 4000)
    return g


SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


# -- random small grammars ---------------------------------------------------------------------


@SETTINGS
@given(g=small_grammars(), data=st.data())
def test_counts_and_probabilities_match_brute_force(g, data):
    lang = brute_language(g)
    assert sum(p for _, p in lang.values()) == 1
    for y, (count, prob) in lang.items():
        assert accepts(g, y)
        assert count_parses(g, y) == count
        assert inside_probability(g, y) == prob
        assert tree_is_valid(g, parse(g, y), y)
    strings = data.draw(st.lists(st.lists(st.sampled_from(g.terminals), min_size=1, max_size=10),
                                 max_size=8))
    for s in strings:
        want = lang.get(tuple(s), (0, Fraction(0)))
        assert (accepts(g, s), count_parses(g, s), inside_probability(g, s)) == (want[0] > 0, *want)
        assert (parse(g, s) is None) == (want[0] == 0)


@SETTINGS
@given(g=small_grammars(), seed=st.integers(0, 2**32 - 1))
def test_next_symbol_probabilities_match_brute_force(g, seed):
    lang = brute_language(g)
    rng = np.random.default_rng(seed)
    sentence = sample(g, rng).tolist()
    mutated = list(sentence)
    mutated[rng.integers(len(mutated))] = int(rng.choice(g.terminals))
    for s in (sentence, mutated):
        got = next_symbol_probs(g, s, exact=True)
        for t in range(len(s) + 1):
            assert got[t] == brute_next(lang, tuple(s[:t]), g.terminals)
        floats = next_symbol_probs(g, s)
        for t, row in enumerate(got):
            if row is None:
                assert np.isnan(floats[t]).all()
            else:
                np.testing.assert_allclose(floats[t], [float(v) for v in row], rtol=1e-15)


@SETTINGS
@given(g=small_grammars(), seed=st.integers(0, 2**32 - 1),
       extra=st.lists(st.integers(1, 3), min_size=1, max_size=9))
def test_recognizer_agrees_with_nltk_on_small_grammars(g, seed, extra):
    rng = np.random.default_rng(seed)
    sentence = sample(g, rng).tolist()
    mutated = list(sentence)
    mutated[rng.integers(len(mutated))] = int(rng.choice(g.terminals))
    randoms = [[g.terminals[(v - 1) % len(g.terminals)] for v in extra]]
    for s in (sentence, mutated, *randoms):
        ok, n = nltk_accepts_and_count(g, s)
        assert accepts(g, s) == ok
        assert count_parses(g, s) == n


# -- shipped grammars vs nltk ------------------------------------------------------------------


def test_recognizer_agrees_with_nltk_on_cfg3f_and_cfg3k():
    from playground.grammar import load_grammar

    verdicts = []
    for name, n, mutations in (("cfg3f", 3, 2), ("cfg3k", 1, 1)):
        g = load_grammar(name)
        rng = np.random.default_rng(11)
        cases = []
        for _ in range(n):
            s = sample(g, rng).tolist()
            cases.append(s)
            for _ in range(mutations):  # single-symbol mutations: some stay in the language
                m = list(s)
                k = int(rng.integers(len(m)))
                m[k] = int(rng.choice([t for t in g.terminals if t != m[k]]))
                cases.append(m)
        cases.append(rng.choice(g.terminals, size=80).tolist())
        for s in cases:
            verdicts.append(accepts(g, s))
            assert verdicts[-1] == nltk_accepts_and_count(g, s, count=False)[0]
    assert any(verdicts) and not all(verdicts)


# -- hand-computed toy grammars ----------------------------------------------------------------


def toy() -> Grammar:
    """S -> A B | B A | A A;  A -> 1 2 | 1 1 2;  B -> 2 1 | 1 2 2: twelve distinct sentences of
    probability 1/12 each (1/3 for the root rule times 1/2 per child)."""
    return Grammar.from_dict({"name": "toy", "start": 9, "terminals": [1, 2], "levels": [
        [{"symbol": 9, "rules": [[7, 8], [8, 7], [7, 7]]}],
        [{"symbol": 7, "rules": [[1, 2], [1, 1, 2]]},
         {"symbol": 8, "rules": [[2, 1], [1, 2, 2]]}]]})


def test_toy_grammar_by_hand():
    g, F = toy(), Fraction
    # sentence 1 2 2 1 (= A B with A = 1 2, B = 2 1); rows: [end, P(1), P(2)] after t tokens.
    # 10 of the 12 sentences start with 1; of those 4 continue with 1 (11221, 112122, 11212,
    # 112112); of the 6 starting 1 2, half continue with 1; 1 2 2 is always followed by 1;
    # 1 2 2 1 ends (1221), or continues as 12212 or 122112.
    want = [[0, F(5, 6), F(1, 6)], [0, F(2, 5), F(3, 5)], [0, F(1, 2), F(1, 2)], [0, 1, 0],
            [F(1, 3), F(1, 3), F(1, 3)]]
    assert next_symbol_probs(g, [1, 2, 2, 1], exact=True) == want
    assert inside_probability(g, [1, 2, 2, 1]) == F(1, 12)
    assert count_parses(g, [1, 2, 2, 1]) == 1 and not accepts(g, [1, 2, 2])


def test_toy_grammar_with_unary_rules_by_hand():
    """S -> A | A A;  A -> 1 | 2 1 (unary rules take the Fraction path). P(1) = 1/4,
    P(21) = 1/4, P(11) = P(121) = P(211) = P(2121) = 1/8."""
    g, F = Grammar.from_dict({"start": 5, "terminals": [1, 2], "levels": [
        [{"symbol": 5, "rules": [[4], [4, 4]]}],
        [{"symbol": 4, "rules": [[1], [2, 1]]}]]}), Fraction
    assert next_symbol_probs(g, [1, 2, 1], exact=True) == [
        [0, F(1, 2), F(1, 2)], [F(1, 2), F(1, 4), F(1, 4)], [0, 1, 0], [1, 0, 0]]
    assert inside_probability(g, [1, 2, 1]) == F(1, 8) and inside_probability(g, [2, 1]) == F(1, 4)
    assert next_symbol_probs(g, [2, 2], exact=True)[2] is None  # impossible prefix
    assert np.isnan(next_symbol_probs(g, [2, 2])[2]).all()

"""The grammar engine: loading and validation, random grammars, sampler, recognizer on the
shipped grammars, next-symbol probabilities (normalisation, chain rule, Monte Carlo), the CLI."""

from __future__ import annotations

import io
import json
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from nltk import Tree as NTree
from test_grammar_oracle import brute_language, long_sentence, rule_table, tree_is_valid

from playground.grammar import (
    Grammar,
    GrammarError,
    accepts,
    accepts_many,
    count_parses,
    format_tree,
    inside_probability,
    load_grammar,
    next_symbol_probs,
    parse,
    random_grammar,
    sample,
    sample_with_tree,
    shipped_grammars,
    tree_to_nltk,
)
from playground.grammar.cli import main as cli_main

SHIPPED = ["cfg3f", "cfg3j", "cfg3k"]
DATA = Path(__file__).parents[1] / "playground" / "grammar" / "data"  # the JSON files, read raw


def mutate(s: list[int], rng, terminals) -> list[int]:
    m = list(s)
    k = int(rng.integers(len(m)))
    m[k] = int(rng.choice([t for t in terminals if t != m[k]]))
    return m


# -- model -------------------------------------------------------------------------------------


def test_shipped_grammars_load_with_their_facts():
    assert shipped_grammars() == SHIPPED
    facts = {g: load_grammar(g) for g in SHIPPED}
    assert [(g.depth, g.n_symbols(), g.n_total_rules()) for g in facts.values()] == [
        (6, 16, 54), (7, 19, 57), (7, 19, 68)]  # as in ../shared/grammars/README.md
    for name, g in facts.items():
        with open(DATA / f"{name}.json") as f:
            assert g.to_dict() == json.load(f)
        assert Grammar.from_dict(json.loads(g.to_json())) == g


def _cfg3f_dict() -> dict:
    return load_grammar("cfg3f").to_dict()


@pytest.mark.parametrize("edit,message", [
    (lambda d: d["levels"][2][0]["rules"].append([13, 99]), "unknown symbol 99"),
    (lambda d: d["levels"][2][0]["rules"].append([13, 16]),
     "symbol 16 is of level 2, expected a symbol of level 3"),
    (lambda d: d["levels"][5][0]["rules"].append([2, 13]),
     "symbol 13 is of level 3, expected a terminal"),
    (lambda d: d["levels"][1][0].__setitem__("rules", []),
     "symbol 19 (level 1) has an empty rule set"),
    (lambda d: d["levels"][1][0]["rules"].append([]), "is empty"),
    (lambda d: d["levels"][1][0]["rules"].append([17, 18]), "duplicate rules"),
    (lambda d: d.__setitem__("start", 19), "level 0 must hold exactly the start symbol 19"),
    (lambda d: d["levels"][3][0].__setitem__("symbol", 14), "symbol 14 of level 3 is already"),
    (lambda d: d.pop("terminals"), "missing key(s) ['terminals']"),
    (lambda d: d["levels"][1][0]["rules"].append([17, "x"]), "must be a list of integers"),
])
def test_validation_names_the_problem(edit, message):
    d = _cfg3f_dict()
    edit(d)
    with pytest.raises(GrammarError) as err:
        Grammar.from_dict(d)
    assert message in str(err.value)


def test_load_by_path_and_malformed_json(tmp_path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(_cfg3f_dict()))
    assert load_grammar(path) == load_grammar("cfg3f")
    path.write_text('{"start": 1,\n "levels": [\n  [}')
    with pytest.raises(GrammarError, match=r"line 3 column 4: malformed JSON"):
        load_grammar(path)
    with pytest.raises(GrammarError, match="neither a shipped grammar"):
        load_grammar(tmp_path / "missing.json")


def test_random_grammar_follows_its_parameters_and_seed():
    a = random_grammar(5, depth=7, symbols_per_level=[3, 3, 4, 4, 3, 3], rules_per_symbol=(2, 4),
                       rule_length=(2, 3))
    assert a == random_grammar(5, depth=7, symbols_per_level=[3, 3, 4, 4, 3, 3])
    assert a != random_grammar(6, depth=7, symbols_per_level=[3, 3, 4, 4, 3, 3])
    assert a.depth == 7 and [len(lv) for lv in a.levels] == [1, 3, 3, 4, 4, 3, 3]
    for rules in rule_table(a).values():
        assert 2 <= len(rules) <= 4 and len(set(rules)) == len(rules)
        assert all(2 <= len(r) <= 3 for r in rules)
    with pytest.raises(GrammarError, match="rules_per_symbol"):
        random_grammar(0, depth=2, symbols_per_level=1, terminals=1, rules_per_symbol=(3, 3),
                       rule_length=(2, 2))


def test_nltk_export_and_tree_printing():
    g = load_grammar("cfg3f")
    cfg = g.to_nltk()
    assert str(cfg.start()) == "22" and len(cfg.productions()) == 54
    sentence, tree = sample_with_tree(g, np.random.default_rng(3))
    nt = tree_to_nltk(tree)
    assert nt.leaves() == [str(t) for t in sentence] and nt.height() == g.depth + 1
    assert all(p in cfg.productions() for p in nt.productions())
    text = format_tree(tree)
    assert text.startswith("(22\n  (") and text.count("(") == text.count(")") > len(sentence) // 3
    small = random_grammar(1, depth=2, symbols_per_level=2)
    art = format_tree(sample_with_tree(small, np.random.default_rng(0))[1], ascii_art=True)
    assert str(small.start) in art and "_" in art


# -- sampler -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_sampler_is_deterministic_and_trees_are_valid(name):
    g = load_grammar(name)
    lo, hi = g.length_range()
    for seed in range(3):
        s1 = sample(g, np.random.default_rng(seed))
        s2, tree = sample_with_tree(g, np.random.default_rng(seed))
        assert s1.tolist() == s2.tolist() and lo <= len(s1) <= hi
        assert tree_is_valid(g, tree, s1.tolist())
    assert (sample(g, np.random.default_rng(0)).tolist()
            != sample(g, np.random.default_rng(1)).tolist())


def test_rule_choice_is_uniform():
    """Root rule frequencies of cfg3f over 4000 trees: chi-square against uniform (3 dof)."""
    g = load_grammar("cfg3f")
    rules = rule_table(g)[g.start]
    rng = np.random.default_rng(0)
    counts = Counter(tuple(k[0] for k in sample_with_tree(g, rng)[1][1]) for _ in range(4000))
    observed = np.array([counts[r] for r in rules])
    chi2 = float(((observed - 1000) ** 2 / 1000).sum())
    assert set(counts) == set(rules) and chi2 < 16.3  # 99.9% quantile, 3 degrees of freedom


# -- recognizer on the shipped grammars ---------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_recognizer_accepts_samples_and_returns_valid_trees(name):
    g = load_grammar(name)
    rng = np.random.default_rng(7)
    for _ in range(20):
        s = sample(g, rng).tolist()
        assert accepts(g, s) and count_parses(g, s) >= 1
        assert tree_is_valid(g, parse(g, s), s)
    assert not accepts(g, []) and not accepts(g, [1, 2, 9]) and parse(g, [4]) is None
    assert count_parses(g, s + [1]) == 0 or accepts(g, s + [1])


def test_mutations_rejected_unless_derivable():
    """A mutated sentence is accepted exactly when a parse tree for it exists (checked)."""
    g = load_grammar("cfg3f")
    rng = np.random.default_rng(1)
    verdicts = []
    for _ in range(40):
        m = mutate(sample(g, rng).tolist(), rng, g.terminals)
        tree = parse(g, m)
        verdicts.append(accepts(g, m))
        assert (tree is not None) == verdicts[-1] == (count_parses(g, m) > 0)
        if tree is not None:
            assert tree_is_valid(g, tree, m)
    assert 0 < sum(verdicts) < len(verdicts)


def test_accepts_many_in_processes_equals_serial():
    g = load_grammar("cfg3f")
    rng = np.random.default_rng(2)
    sents = [sample(g, rng).tolist() for _ in range(150)]
    sents = [mutate(s, rng, g.terminals) if k % 3 == 0 else s for k, s in enumerate(sents)]
    serial = [accepts(g, s) for s in sents]
    assert accepts_many(g, sents, workers=2, chunk=40) == serial and not all(serial)


# -- next-symbol probabilities ------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_probabilities_normalised_and_chain_rule_exact(name):
    g = load_grammar(name)
    s = sample(g, np.random.default_rng(4)).tolist()
    rows = next_symbol_probs(g, s, exact=True)
    assert all(sum(r) == 1 for r in rows) and rows[0][0] == 0
    product = Fraction(1)
    for t, tok in enumerate(s):
        product *= rows[t][1 + g.terminals.index(tok)]
    assert product * rows[-1][0] == inside_probability(g, s) > 0
    floats = next_symbol_probs(g, s)
    np.testing.assert_allclose(floats, [[float(v) for v in r] for r in rows], rtol=1e-15)


def test_long_sentence_is_exact_where_floats_underflow():
    """A ~1000-token cfg3k sentence: P(sentence) is below the smallest normal float64, yet every
    conditional is a proper distribution and the chain rule holds exactly."""
    g = load_grammar("cfg3k")
    s = long_sentence(g, np.random.default_rng(1), 1000)
    p = inside_probability(g, s)
    assert 0 < p < Fraction(2) ** -1022
    rows = next_symbol_probs(g, s, exact=True)
    chain = Fraction(rows[-1][0])
    for t, tok in enumerate(s):
        chain *= rows[t][1 + g.terminals.index(tok)]
    assert chain == p
    floats = next_symbol_probs(g, s)
    assert np.allclose(floats.sum(1), 1, atol=1e-12) and (floats >= 0).all()


def _monte_carlo_check(g: Grammar, sentences: list[tuple[int, ...]], max_prefix: int,
                       min_count: int) -> int:
    """Compare next-symbol frequencies after frequent prefixes with the exact distribution;
    returns the number of prefixes checked. Tolerance: 5 standard errors."""
    follow: dict[tuple, Counter] = {}
    for s in sentences:
        for t in range(min(len(s), max_prefix) + 1):
            follow.setdefault(s[:t], Counter())[s[t] if t < len(s) else "end"] += 1
    checked = 0
    for prefix, counter in follow.items():
        n = sum(counter.values())
        if n < min_count:
            continue
        want = next_symbol_probs(g, list(prefix))[len(prefix)]
        got = np.array([counter["end"], *(counter[t] for t in g.terminals)]) / n
        assert np.all(np.abs(got - want) <= 5 * np.sqrt(want * (1 - want) / n) + 1e-12), prefix
        checked += 1
    return checked


def test_monte_carlo_agreement_cfg3f():
    g = load_grammar("cfg3f")
    rng = np.random.default_rng(123)
    # only the first four tokens matter here (no sentence ends that early)
    sentences = [tuple(sample(g, rng).tolist()[:4]) for _ in range(8000)]
    assert _monte_carlo_check(g, sentences, max_prefix=3, min_count=400) >= 8


def test_monte_carlo_agreement_with_ends():
    """A random grammar whose sentences end at many lengths: the end probability matches too."""
    g = random_grammar(3, depth=3, symbols_per_level=2, terminals=2, rules_per_symbol=(2, 3),
                       rule_length=(1, 2))
    lang = brute_language(g)
    assert len({len(y) for y in lang}) >= 4
    rng = np.random.default_rng(9)
    sentences = [tuple(sample(g, rng).tolist()) for _ in range(6000)]
    assert _monte_carlo_check(g, sentences, max_prefix=8, min_count=300) >= 6


# -- command line ------------------------------------------------------------------------------


def test_cli_sample_check_nextprob_show(tmp_path, capsys):
    cli_main(["sample", "cfg3f", "count=4", "seed=3"])
    lines = capsys.readouterr().out.splitlines()
    cli_main(["sample", "cfg3f", "count=2", "seed=3"])
    assert capsys.readouterr().out.splitlines() == lines[:2] and len(lines) == 4
    rng = np.random.default_rng(0)
    g = load_grammar("cfg3f")
    bad = " ".join(map(str, mutate([int(w) for w in lines[0].split()], rng, g.terminals)))
    f = tmp_path / "s.txt"
    f.write_text("\n".join([*lines, bad]) + "\n")
    cli_main(["check", "cfg3f", str(f), "count_parses=true"])
    out = capsys.readouterr().out.splitlines()
    want_bad = count_parses(g, [int(w) for w in bad.split()])
    assert out[:4] == [f"accept {count_parses(g, [int(w) for w in x.split()])}" for x in lines]
    assert out[4] == (f"accept {want_bad}" if want_bad else "reject 0")
    f.write_text(lines[0] + "\n")
    cli_main(["nextprob", "cfg3f", str(f)])
    rows = capsys.readouterr().out.splitlines()
    n = len(lines[0].split())
    assert len(rows) == n + 3 and rows[1].split("\t") == ["t", "next", "end", "1", "2", "3"]
    assert all(abs(sum(float(v) for v in r.split("\t")[2:]) - 1) < 1e-5 for r in rows[2:])
    assert rows[-1].split("\t")[1] == "end"
    cli_main(["show", "cfg3f"])
    assert "22 -> 20 21 | 20 19 21 | 21 19 19 | 20 20" in capsys.readouterr().out


@pytest.mark.parametrize("content,message", [
    ("1 2 3\n\n1 2\n", "line 2: empty line"),
    ("1 2 3\n1 7 2\n", "line 2: '7' is not a terminal"),
    ("1 2 3\n1 b 2\n", "line 2: 'b' is not a terminal"),
    ("", "no sentences"),
])
def test_cli_bad_input_names_the_line(tmp_path, capsys, content, message):
    f = tmp_path / "bad.txt"
    f.write_text(content)
    for cmd in ("check", "nextprob"):
        with pytest.raises(SystemExit) as err:
            cli_main([cmd, "cfg3f", str(f)])
        assert err.value.code == 2 and message in capsys.readouterr().err


def test_cli_bad_grammar_and_binary_file(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli_main(["show", "cfg9z"])
    assert "neither a shipped grammar" in capsys.readouterr().err
    f = tmp_path / "bin.txt"
    f.write_bytes(b"1 2\n\xff\xfe\n")
    with pytest.raises(SystemExit):
        cli_main(["check", "cfg3f", str(f)])
    assert "not a UTF-8 text file" in capsys.readouterr().err


def test_cli_random_trees_and_stdin(tmp_path, capsys, monkeypatch):
    cli_main(["random", "seed=7", "depth=3", "name=r7"])
    path = tmp_path / "r7.json"
    path.write_text(capsys.readouterr().out)
    assert load_grammar(path) == random_grammar(7, depth=3, name="r7")
    cli_main(["sample", str(path), "count=2", "trees=true"])
    out = capsys.readouterr().out.splitlines()
    trees, sentences = out[0::2], out[1::2]
    g = load_grammar(path)
    for tree, sentence in zip(trees, sentences):
        assert NTree.fromstring(tree).leaves() == sentence.split()
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(sentences) + "\n"))
    cli_main(["check", str(path), "-", "tree=true"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "accept" and out[1].startswith(f"({g.start} ")


def test_engine_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys, playground.grammar, playground.grammar.cli; "
            "assert 'torch' not in sys.modules, 'the grammar engine imported torch'")
    subprocess.run([sys.executable, "-c", code], check=True)

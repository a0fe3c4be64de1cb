"""Layered context-free grammars: the data model, JSON loading with validation, random
generation, and export to nltk.

A layered grammar has ``depth`` levels of non-terminals. Level 0 holds only the start symbol;
every rule of a level-i symbol is a non-empty sequence of level-(i+1) symbols, and the rules of
the last level produce terminals. Every leaf of every parse tree therefore sits at depth
``depth``, and no symbol is recursive. Rule choice when generating is uniform over a symbol's
rules.

JSON format (as in ``data/cfg3f.json``)::

    {"name": "cfg3f", "start": 22, "terminals": [1, 2, 3],
     "levels": [[{"symbol": 22, "rules": [[20, 21], [20, 19, 21]]}],
                [{"symbol": 19, "rules": [[18, 16, 18], [17, 18]]}, ...], ...]}

Internally symbols are renumbered per level (``rules[i][a]`` is a tuple of rules, each a tuple
of indices into level i+1; level ``depth`` is the terminals), which the chart code relies on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

DATA_DIR = Path(__file__).parent / "data"

# A parse tree: (symbol, children) for a non-terminal, the terminal symbol itself for a leaf.
Tree = int | tuple[int, tuple["Tree", ...]]


class GrammarError(ValueError):
    """A grammar file or definition is invalid; the message says where and why."""


def shipped_grammars() -> list[str]:
    """Names of the grammars shipped with the package (``data/<name>.json``)."""
    return sorted(p.stem for p in DATA_DIR.glob("*.json"))


class Grammar:
    """A validated layered CFG (see the module docstring)."""

    def __init__(self, name: str, start: int, terminals: Sequence[int],
                 levels: Sequence[Sequence[tuple[int, Sequence[Sequence[int]]]]]):
        self.name, self.start = str(name), start
        self.terminals = tuple(terminals)
        self.levels = tuple(tuple((sym, tuple(tuple(r) for r in rules)) for sym, rules in lv)
                            for lv in levels)
        _validate(self)
        self.depth = len(self.levels)
        # symbols[i]: the symbols of level i; symbols[depth] = the terminals
        self.symbols = [tuple(sym for sym, _ in lv) for lv in self.levels] + [self.terminals]
        self.index = [{s: k for k, s in enumerate(syms)} for syms in self.symbols]
        self.rules = [tuple(tuple(tuple(self.index[i + 1][c] for c in r) for r in rules)
                            for _, rules in lv) for i, lv in enumerate(self.levels)]
        self.n_rules = [np.array([len(rs) for rs in lv], np.int64) for lv in self.rules]
        self.rule_children, self.rule_lengths = _rule_tables(self.rules)

    # -- construction --------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any, where: str = "grammar") -> Grammar:
        if not isinstance(data, dict):
            raise GrammarError(f"{where}: expected a JSON object with keys name, start, "
                               "terminals, levels")
        missing = [k for k in ("start", "terminals", "levels") if k not in data]
        if missing:
            raise GrammarError(f"{where}: missing key(s) {missing}")
        levels = data["levels"]
        if not isinstance(levels, list) or not levels:
            raise GrammarError(f"{where}: 'levels' must be a non-empty list of levels")
        parsed = []
        for i, lv in enumerate(levels):
            if not isinstance(lv, list) or not lv:
                raise GrammarError(f"{where}: levels[{i}] must be a non-empty list of symbols")
            parsed.append([_parse_entry(e, f"{where}: levels[{i}][{j}]") for j, e in enumerate(lv)])
        return cls(data.get("name", "grammar"), data["start"], _int_list(data["terminals"],
                   f"{where}: 'terminals'"), parsed)

    def to_dict(self) -> dict:
        return {"name": self.name, "start": self.start, "terminals": list(self.terminals),
                "levels": [[{"symbol": s, "rules": [list(r) for r in rules]} for s, rules in lv]
                           for lv in self.levels]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    # -- facts ---------------------------------------------------------------------------------

    def __repr__(self) -> str:
        return (f"Grammar({self.name!r}, depth={self.depth}, non-terminals={self.n_symbols()}, "
                f"rules={self.n_total_rules()})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Grammar) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self.to_json())

    def n_symbols(self) -> int:
        return sum(len(lv) for lv in self.levels)

    def n_total_rules(self) -> int:
        return sum(len(rules) for lv in self.levels for _, rules in lv)

    def length_range(self) -> tuple[int, int]:
        """(shortest, longest) sentence the grammar can produce."""
        lo = hi = [1] * len(self.terminals)
        for lv in reversed(self.rules):
            lo = [min(sum(lo[c] for c in r) for r in rules) for rules in lv]
            hi = [max(sum(hi[c] for c in r) for r in rules) for rules in lv]
        return lo[0], hi[0]

    def length_pmf(self) -> np.ndarray:
        """float64[n]: P(sentence length = n) under uniform rule choice (children's length
        distributions convolved, averaged over rules, level by level bottom-up)."""
        pmfs = [np.array([0.0, 1.0]) for _ in self.terminals]
        for lv in reversed(self.rules):
            pmfs = [_rule_average([_convolve_all([pmfs[c] for c in r]) for r in rules])
                    for rules in lv]
        return pmfs[0]

    def encode(self, sentence: Sequence[int]) -> list[int]:
        """Terminal symbols -> terminal indices; raises GrammarError for a non-terminal."""
        index = self.index[self.depth]
        try:
            return [index[int(t)] for t in sentence]
        except (KeyError, ValueError, TypeError):
            bad = next(t for t in sentence if _safe_int(t) not in index)
            raise GrammarError(f"{bad!r} is not a terminal of grammar {self.name!r} "
                               f"(terminals: {list(self.terminals)})") from None

    def format_rules(self) -> str:
        """The rules, one line per symbol: ``22 -> 20 21 | 20 19 21 | ...`` grouped by level."""
        lines = [f"# grammar {self.name}: start {self.start}, terminals "
                 f"{' '.join(map(str, self.terminals))}, depth {self.depth}"]
        for i, lv in enumerate(self.levels):
            lines.append(f"# level {i}")
            lines += [f"{s} -> " + " | ".join(" ".join(map(str, r)) for r in rules)
                      for s, rules in lv]
        return "\n".join(lines)

    # -- nltk ----------------------------------------------------------------------------------

    def to_nltk(self):
        """The same grammar as an ``nltk.CFG`` (non-terminals and terminals named by their
        symbol as a string)."""
        from nltk import CFG, Nonterminal, Production

        prods = [Production(Nonterminal(str(sym)), [_nltk_symbol(c, self.terminals) for c in r])
                 for lv in self.levels for sym, rules in lv for r in rules]
        return CFG(Nonterminal(str(self.start)), prods)


def _convolve_all(pmfs: list[np.ndarray]) -> np.ndarray:
    out = np.ones(1)
    for p in pmfs:
        out = np.convolve(out, p)
    return out


def _rule_average(pmfs: list[np.ndarray]) -> np.ndarray:
    out = np.zeros(max(len(p) for p in pmfs))
    for p in pmfs:
        out[: len(p)] += p / len(pmfs)
    return out


def _rule_tables(rules: list) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per level: children[a, r, :] (padded with -1) and lengths[a, r] of rule r of symbol a,
    for vectorised sampling."""
    children, lengths = [], []
    for lv in rules:
        width = max(len(r) for rs in lv for r in rs)
        ch = np.full((len(lv), max(len(rs) for rs in lv), width), -1, np.int64)
        ln = np.zeros(ch.shape[:2], np.int64)
        for a, rs in enumerate(lv):
            for k, r in enumerate(rs):
                ch[a, k, : len(r)] = r
                ln[a, k] = len(r)
        children.append(ch)
        lengths.append(ln)
    return children, lengths


def _safe_int(t: Any) -> Any:
    try:
        return int(t)
    except (ValueError, TypeError):
        return t


def _nltk_symbol(sym: int, terminals: tuple[int, ...]):
    from nltk import Nonterminal

    return str(sym) if sym in terminals else Nonterminal(str(sym))


def _int_list(value: Any, where: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool)
                                              for v in value):
        raise GrammarError(f"{where} must be a list of integers, got {value!r}")
    return value


def _parse_entry(entry: Any, where: str) -> tuple[int, list[list[int]]]:
    if not isinstance(entry, dict) or "symbol" not in entry or "rules" not in entry:
        raise GrammarError(f"{where}: expected an object {{\"symbol\": int, \"rules\": "
                           f"[[...], ...]}}")
    sym = entry["symbol"]
    if not isinstance(sym, int) or isinstance(sym, bool):
        raise GrammarError(f"{where}: symbol must be an integer, got {sym!r}")
    rules = entry["rules"]
    if not isinstance(rules, list):
        raise GrammarError(f"{where} (symbol {sym}): 'rules' must be a list of rules")
    return sym, [_int_list(r, f"{where} (symbol {sym}) rule {k}") for k, r in enumerate(rules)]


def _validate(g: Grammar) -> None:
    """Every structural promise of a layered grammar, with messages that say where it breaks."""
    if not g.terminals or len(set(g.terminals)) != len(g.terminals):
        raise GrammarError(f"{g.name}: terminals must be distinct and non-empty, "
                           f"got {list(g.terminals)}")
    level_of: dict[int, int] = {t: len(g.levels) for t in g.terminals}
    for i, lv in enumerate(g.levels):
        if not lv:
            raise GrammarError(f"{g.name}: level {i} has no symbols")
        for sym, _ in lv:
            if sym in level_of:
                what = ("a terminal" if sym in g.terminals
                        else f"already a symbol of level {level_of[sym]}")
                raise GrammarError(f"{g.name}: symbol {sym} of level {i} is {what}")
            level_of[sym] = i
    if [s for s, _ in g.levels[0]] != [g.start]:
        raise GrammarError(f"{g.name}: level 0 must hold exactly the start symbol {g.start}, "
                           f"got {[s for s, _ in g.levels[0]]}")
    for i, lv in enumerate(g.levels):
        for sym, rules in lv:
            _validate_rules(g.name, i, sym, rules, level_of, len(g.levels))


def _validate_rules(name: str, i: int, sym: int, rules, level_of: dict[int, int],
                    depth: int) -> None:
    if not rules:
        raise GrammarError(f"{name}: symbol {sym} (level {i}) has an empty rule set")
    want = "a terminal" if i + 1 == depth else f"a symbol of level {i + 1}"
    for k, rule in enumerate(rules):
        where = f"{name}: rule {k} of symbol {sym} (level {i}) {list(rule)}"
        if not rule:
            raise GrammarError(f"{where} is empty")
        for c in rule:
            if c not in level_of:
                raise GrammarError(f"{where}: unknown symbol {c}")
            if level_of[c] != i + 1:
                got = "a terminal" if level_of[c] == depth else f"of level {level_of[c]}"
                raise GrammarError(f"{where}: symbol {c} is {got}, expected {want}")
    if len(set(rules)) != len(rules):
        raise GrammarError(f"{name}: symbol {sym} (level {i}) has duplicate rules")


def load_grammar(name_or_path: str | Path) -> Grammar:
    """A shipped grammar by name (``cfg3f``) or a grammar JSON file by path."""
    text = str(name_or_path)
    path = DATA_DIR / f"{text}.json"
    if not path.is_file():
        path = Path(text)
    if not path.is_file():
        raise GrammarError(f"grammar {text!r} is neither a shipped grammar "
                           f"({', '.join(shipped_grammars())}) nor a JSON file")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise GrammarError(f"{path}: line {err.lineno} column {err.colno}: "
                           f"malformed JSON ({err.msg})") from None
    return Grammar.from_dict(data, where=str(path))


def random_grammar(seed: int, depth: int = 6, symbols_per_level: int | Sequence[int] = 3,
                   terminals: int = 3, rules_per_symbol: tuple[int, int] = (2, 4),
                   rule_length: tuple[int, int] = (2, 3), name: str | None = None) -> Grammar:
    """A random layered grammar, a pure function of its arguments (the cfg3 family of the paper:
    depth 6-7, 3 symbols per level, 2-4 rules per symbol, rules of 2-3 symbols, 3 terminals).

    Level 0 is the start symbol; ``symbols_per_level`` gives the size of levels 1..depth-1.
    Symbols are numbered bottom-up: terminals 1..T, then the last level, ..., the start last.
    Rules of a symbol are distinct."""
    sizes = _level_sizes(depth, symbols_per_level)
    _check_ranges(rules_per_symbol, rule_length, sizes, terminals)
    rng = np.random.default_rng(seed)
    numbers: list[list[int]] = [list(range(1, terminals + 1))]
    for size in reversed(sizes):  # bottom-up numbering
        first = numbers[0][-1] + 1
        numbers.insert(0, list(range(first, first + size)))
    levels = []
    for i, syms in enumerate(numbers[:-1]):
        below = numbers[i + 1]
        levels.append([(sym, _random_rules(rng, below, rules_per_symbol, rule_length))
                       for sym in syms])
    return Grammar(name or f"random-{seed}", numbers[0][0], numbers[-1], levels)


def _level_sizes(depth: int, symbols_per_level: int | Sequence[int]) -> list[int]:
    if depth < 1:
        raise GrammarError(f"depth={depth} is invalid: expected an integer >= 1")
    if isinstance(symbols_per_level, int):
        sizes = [symbols_per_level] * (depth - 1)
    else:
        sizes = list(symbols_per_level)
    if len(sizes) != depth - 1 or any(s < 1 for s in sizes):
        raise GrammarError(f"symbols_per_level={symbols_per_level!r} is invalid: expected an "
                           f"integer >= 1 or {depth - 1} of them (levels 1..depth-1)")
    return [1, *sizes]


def _check_ranges(rules_per_symbol, rule_length, sizes: list[int], terminals: int) -> None:
    (rlo, rhi), (llo, lhi) = rules_per_symbol, rule_length
    if not 1 <= rlo <= rhi:
        raise GrammarError(f"rules_per_symbol={rules_per_symbol!r} is invalid: "
                           "expected 1 <= lo <= hi")
    if not 1 <= llo <= lhi:
        raise GrammarError(f"rule_length={rule_length!r} is invalid: expected 1 <= lo <= hi")
    if terminals < 1:
        raise GrammarError(f"terminals={terminals} is invalid: expected an integer >= 1")
    narrowest = min([*sizes[1:], terminals])
    if sum(narrowest**n for n in range(llo, lhi + 1)) < rhi:
        raise GrammarError(f"rules_per_symbol={rules_per_symbol!r}: a level of {narrowest} symbols "
                           f"allows fewer distinct rules of length {rule_length} than that")


def _random_rules(rng: np.random.Generator, below: list[int], rules_per_symbol: tuple[int, int],
                  rule_length: tuple[int, int]) -> list[list[int]]:
    count = int(rng.integers(rules_per_symbol[0], rules_per_symbol[1] + 1))
    rules: list[list[int]] = []
    while len(rules) < count:
        n = int(rng.integers(rule_length[0], rule_length[1] + 1))
        rule = [below[int(k)] for k in rng.integers(0, len(below), size=n)]
        if rule not in rules:
            rules.append(rule)
    return rules


# -- parse trees ---------------------------------------------------------------------------------


def tree_leaves(tree: Tree) -> list[int]:
    """The terminals of a parse tree, left to right."""
    if isinstance(tree, tuple):
        return [t for child in tree[1] for t in tree_leaves(child)]
    return [tree]


def bracket(tree: Tree) -> str:
    """A one-line bracketed rendering, ``(22 (20 ...) ...)``, readable by ``nltk.Tree.fromstring``
    (fast: no nltk objects)."""
    if isinstance(tree, tuple):
        return f"({tree[0]} {' '.join(bracket(c) for c in tree[1])})"
    return str(tree)


def tree_to_nltk(tree: Tree):
    """Our (symbol, children) tree as an ``nltk.Tree`` (labels and leaves as strings)."""
    from nltk import Tree as NTree

    if isinstance(tree, tuple):
        return NTree(str(tree[0]), [tree_to_nltk(c) for c in tree[1]])
    return str(tree)


def format_tree(tree: Tree, ascii_art: bool = False) -> str:
    """A readable rendering via nltk: bracketed (default) or ASCII-art (wide for long trees)."""
    nt = tree_to_nltk(tree)
    if isinstance(nt, str):
        return nt
    if ascii_art:
        from nltk.tree import TreePrettyPrinter

        return TreePrettyPrinter(nt).text()
    return nt.pformat(margin=100)

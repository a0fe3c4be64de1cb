"""``playground-grammar``: sample, check and score sentences of a layered grammar.

    playground-grammar sample GRAMMAR count=N [seed=S] [trees=true]
    playground-grammar check GRAMMAR FILE [count_parses=true] [tree=true] [workers=W]
    playground-grammar nextprob GRAMMAR FILE [exact=true]
    playground-grammar show GRAMMAR
    playground-grammar random [seed=S] [depth=D] [symbols=K] [terminals=T]
                              [rules=LO,HI] [rule_length=LO,HI] [name=NAME]  > g.json

GRAMMAR is a shipped name (cfg3f, cfg3j, cfg3k) or a grammar JSON file. FILE holds one sentence
per line (terminals separated by spaces), ``-`` for standard input. ``sample`` prints sentence k
from the generator seeded with [S, k], so a longer run extends a shorter one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from playground.cli import Args, Command
from playground.cli import main as cli_main
from playground.errors import ConfigError
from playground.grammar.inside import count_parses, next_symbol_probs
from playground.grammar.model import (
    Grammar,
    GrammarError,
    format_tree,
    load_grammar,
    random_grammar,
)
from playground.grammar.recognizer import accepts_many, parse
from playground.grammar.sampler import sample, sample_with_tree


class InputError(ValueError):
    """A bad input file or line; the message names it."""


def read_sentences(g: Grammar, path: str) -> list[list[int]]:
    """The sentences of FILE as terminal symbols; InputError naming the line for anything bad."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_bytes().decode("utf-8")
    except OSError as err:
        raise InputError(f"{path}: cannot read ({err.strerror})") from None
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not a UTF-8 text file (byte {err.start})") from None
    lines = text.splitlines()
    if not lines:
        raise InputError(f"{path}: no sentences (the file is empty)")
    return [_parse_line(g, path, n, line) for n, line in enumerate(lines, 1)]


def _parse_line(g: Grammar, path: str, n: int, line: str) -> list[int]:
    words = line.split()
    if not words:
        raise InputError(f"{path} line {n}: empty line (expected terminals separated by spaces)")
    out = []
    for w in words:
        try:
            value = int(w)
        except ValueError:
            value = None
        if value not in g.terminals:
            raise InputError(f"{path} line {n}: {w!r} is not a terminal of grammar {g.name} "
                             f"(terminals: {' '.join(map(str, g.terminals))})")
        out.append(value)
    return out


def cmd_sample(g: Grammar, args: Args) -> None:
    seed, trees = args.int("seed"), args.flag("trees")
    for k in range(args.int("count")):
        rng = np.random.default_rng([seed, k])
        if trees:
            sentence, tree = sample_with_tree(g, rng)
            print(format_tree(tree))
        else:
            sentence = sample(g, rng)
        print(" ".join(map(str, sentence.tolist())), flush=False)


def cmd_check(g: Grammar, args: Args) -> None:
    counts, trees = args.flag("count_parses"), args.flag("tree")
    sentences = read_sentences(g, args.positional[1])
    verdicts = accepts_many(g, sentences, workers=args.int("workers", 1))
    for sentence, ok in zip(sentences, verdicts):
        line = "accept" if ok else "reject"
        if counts:
            line += f" {count_parses(g, sentence)}"
        print(line)
        if trees and ok:
            print(format_tree(parse(g, sentence)))


def cmd_nextprob(g: Grammar, args: Args) -> None:
    """Per line: a header, then one row per prefix length t = 0..L: P(end), P(terminal)..."""
    names, exact = ["end", *map(str, g.terminals)], args.flag("exact")
    for n, sentence in enumerate(read_sentences(g, args.positional[1]), 1):
        print(f"# line {n}: {len(sentence)} tokens; P(next | first t tokens)")
        print("\t".join(["t", "next", *names]))
        rows = next_symbol_probs(g, sentence, exact=exact)
        for t, row in enumerate(rows):
            nxt = str(sentence[t]) if t < len(sentence) else "end"
            if row is None or (not exact and np.isnan(row).any()):
                cells = ["impossible prefix"]
            else:
                cells = [str(v) if exact else f"{v:.6g}" for v in row]
            print("\t".join([str(t), nxt, *cells]))


def cmd_show(g: Grammar, args: Args) -> None:
    lo, hi = g.length_range()
    print(g.format_rules())
    print(f"# {g.n_symbols()} non-terminals, {g.n_total_rules()} rules; "
          f"sentence lengths {lo}..{hi}")


def cmd_random(args: Args) -> None:
    pair = lambda key: tuple(int(v) for v in args.list(key))  # noqa: E731
    g = random_grammar(args.int("seed"), depth=args.int("depth", 1),
                       symbols_per_level=args.int("symbols", 1),
                       terminals=args.int("terminals", 1), rules_per_symbol=pair("rules"),
                       rule_length=pair("rule_length"), name=args["name"] or None)
    print(g.to_json())


def on_grammar(command):
    """A command on the grammar named by the first positional argument; grammar and input
    errors are reported like invalid values (status 2)."""
    def run(args: Args) -> None:
        try:
            command(load_grammar(args.positional[0]), args)
        except (GrammarError, InputError) as err:
            raise ConfigError(str(err)) from None
        except BrokenPipeError:  # e.g. piped into head
            sys.stderr.close()
    return run


COMMANDS = [
    Command("sample", "print sampled sentences, one per line "
                      "(sentence k from the generator seeded [seed, k])",
            on_grammar(cmd_sample), {"count": ("10", "sentences"), "seed": ("0", "sampling seed"),
                                     "trees": ("false",
                                               "print each parse tree before its sentence")},
            ("GRAMMAR",), examples=("playground-grammar sample cfg3f count=4 seed=3",)),
    Command("check", "accept/reject each line of FILE ('-': standard input)", on_grammar(cmd_check),
            {"count_parses": ("false", "also print the exact parse count"),
             "tree": ("false", "print one parse tree of accepted lines"),
             "workers": ("1", "processes for recognition")},
            ("GRAMMAR", "FILE"),
            examples=("playground-grammar check cfg3f sentences.txt count_parses=true",)),
    Command("nextprob", "the true next-symbol distribution after every prefix of each line",
            on_grammar(cmd_nextprob), {"exact": ("false", "print exact fractions")},
            ("GRAMMAR", "FILE"), examples=("playground-grammar nextprob cfg3f sentences.txt",)),
    Command("show", "print the rules", on_grammar(cmd_show), positional=("GRAMMAR",),
            examples=("playground-grammar show cfg3f",)),
    Command("random", "print a random layered grammar as JSON (the paper's defaults)", cmd_random,
            {"seed": ("0", "seed"), "depth": ("6", "levels of non-terminals"),
             "symbols": ("3", "symbols per level below the start"), "terminals": ("3", "terminals"),
             "rules": ("2,4", "LO,HI rules per symbol"),
             "rule_length": ("2,3", "LO,HI symbols per rule"), "name": ("", "the grammar's name")},
            examples=("playground-grammar random seed=7 depth=3 > g.json",)),
]


def main(argv: list[str] | None = None) -> None:
    cli_main("playground-grammar", "sample, check and score sentences of a layered grammar "
             "(GRAMMAR: cfg3f, cfg3j, cfg3k or a grammar JSON file)", COMMANDS, argv)


if __name__ == "__main__":
    main()

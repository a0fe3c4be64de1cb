"""``playground-grammar``: sample, check and score sentences of a layered grammar.

    playground-grammar sample GRAMMAR --count N [--seed S] [--trees]
    playground-grammar check GRAMMAR FILE [--count-parses] [--tree] [--workers W]
    playground-grammar nextprob GRAMMAR FILE [--exact]
    playground-grammar show GRAMMAR
    playground-grammar random [--seed S] [--depth D] [--symbols K] [--terminals T]
                              [--rules LO HI] [--rule-length LO HI] [--name NAME]  > g.json

GRAMMAR is a shipped name (cfg3f, cfg3j, cfg3k) or a grammar JSON file. FILE holds one sentence
per line (terminals separated by spaces), ``-`` for standard input. ``sample`` prints sentence k
from the generator seeded with [S, k], so a longer run extends a shorter one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

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


def cmd_sample(g: Grammar, args) -> None:
    for k in range(args.count):
        rng = np.random.default_rng([args.seed, k])
        if args.trees:
            sentence, tree = sample_with_tree(g, rng)
            print(format_tree(tree))
        else:
            sentence = sample(g, rng)
        print(" ".join(map(str, sentence.tolist())), flush=False)


def cmd_check(g: Grammar, args) -> None:
    sentences = read_sentences(g, args.file)
    verdicts = accepts_many(g, sentences, workers=args.workers)
    for sentence, ok in zip(sentences, verdicts):
        line = "accept" if ok else "reject"
        if args.count_parses:
            line += f" {count_parses(g, sentence)}"
        print(line)
        if args.tree and ok:
            print(format_tree(parse(g, sentence)))


def cmd_nextprob(g: Grammar, args) -> None:
    """Per line: a header, then one row per prefix length t = 0..L: P(end), P(terminal)..."""
    names = ["end", *map(str, g.terminals)]
    for n, sentence in enumerate(read_sentences(g, args.file), 1):
        print(f"# line {n}: {len(sentence)} tokens; P(next | first t tokens)")
        print("\t".join(["t", "next", *names]))
        rows = next_symbol_probs(g, sentence, exact=args.exact)
        for t, row in enumerate(rows):
            nxt = str(sentence[t]) if t < len(sentence) else "end"
            if row is None or (not args.exact and np.isnan(row).any()):
                cells = ["impossible prefix"]
            else:
                cells = [str(v) if args.exact else f"{v:.6g}" for v in row]
            print("\t".join([str(t), nxt, *cells]))


def cmd_show(g: Grammar, args) -> None:
    lo, hi = g.length_range()
    print(g.format_rules())
    print(f"# {g.n_symbols()} non-terminals, {g.n_total_rules()} rules; sentence lengths {lo}..{hi}")


def cmd_random(args) -> None:
    g = random_grammar(args.seed, depth=args.depth, symbols_per_level=args.symbols,
                       terminals=args.terminals, rules_per_symbol=tuple(args.rules),
                       rule_length=tuple(args.rule_length), name=args.name)
    print(g.to_json())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="playground-grammar", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample", help="print sampled sentences, one per line")
    s.add_argument("grammar")
    s.add_argument("--count", type=int, default=10)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--trees", action="store_true", help="print each parse tree before its sentence")
    c = sub.add_parser("check", help="accept/reject each line of FILE")
    c.add_argument("grammar")
    c.add_argument("file")
    c.add_argument("--count-parses", action="store_true", help="also print the exact parse count")
    c.add_argument("--tree", action="store_true", help="print one parse tree of accepted lines")
    c.add_argument("--workers", type=int, default=1, help="processes for recognition")
    n = sub.add_parser("nextprob", help="true next-symbol distribution after every prefix")
    n.add_argument("grammar")
    n.add_argument("file")
    n.add_argument("--exact", action="store_true", help="print exact fractions")
    w = sub.add_parser("show", help="print the rules")
    w.add_argument("grammar")
    r = sub.add_parser("random", help="print a random layered grammar as JSON (paper defaults)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--depth", type=int, default=6, help="levels of non-terminals")
    r.add_argument("--symbols", type=int, default=3, help="symbols per level below the start")
    r.add_argument("--terminals", type=int, default=3)
    r.add_argument("--rules", type=int, nargs=2, default=[2, 4], metavar=("LO", "HI"))
    r.add_argument("--rule-length", type=int, nargs=2, default=[2, 3], metavar=("LO", "HI"))
    r.add_argument("--name", default=None)
    return p


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if getattr(args, "count", 1) < 0 or getattr(args, "workers", 1) < 1:
        print("error: --count must be >= 0 and --workers >= 1", file=sys.stderr)
        raise SystemExit(2)
    try:
        if args.command == "random":
            return cmd_random(args)
        g = load_grammar(args.grammar)
        {"sample": cmd_sample, "check": cmd_check, "nextprob": cmd_nextprob,
         "show": cmd_show}[args.command](g, args)
    except (GrammarError, InputError) as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    except BrokenPipeError:  # e.g. piped into head
        sys.stderr.close()


if __name__ == "__main__":
    main()

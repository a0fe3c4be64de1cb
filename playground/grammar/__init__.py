"""Layered context-free grammars (the Lano task's engine): loading and validation, random
generation, sampling, exact recognition and parse counting, exact next-token probabilities.

No torch here: the engine is plain Python + numpy (nltk only for export and tree printing).
See docs/grammar.md for how the dynamic programs work.
"""

from playground.grammar.inside import (
    count_parses,
    inside_probability,
    next_symbol_probs,
    next_symbol_weights,
)
from playground.grammar.model import (
    Grammar,
    GrammarError,
    Tree,
    bracket,
    format_tree,
    load_grammar,
    random_grammar,
    shipped_grammars,
    tree_leaves,
    tree_to_nltk,
)
from playground.grammar.recognizer import accepts, accepts_many, parse
from playground.grammar.sampler import (
    sample,
    sample_frontiers,
    sample_levels,
    sample_many,
    sample_with_tree,
)

__all__ = [
    "Grammar", "GrammarError", "Tree", "accepts", "accepts_many", "bracket", "count_parses",
    "format_tree",
    "inside_probability", "load_grammar", "next_symbol_probs", "next_symbol_weights", "parse",
    "random_grammar", "sample", "sample_frontiers", "sample_levels", "sample_many",
    "sample_with_tree", "shipped_grammars", "tree_leaves", "tree_to_nltk",
]

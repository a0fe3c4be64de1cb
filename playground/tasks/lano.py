"""Lano: hierarchical structure. Language modelling of sentences of a layered CFG.

An example is ``<bos>`` followed by one sentence sampled from the grammar (uniform rule
choice), every token a target. Packed windows therefore read ``<bos> s1 <bos> s2 …`` and the
``<bos>`` that opens a sentence is also the predicted end of the one before it.

Packing (``data.packing=auto``): ``stream``, the paper's continuous windows — the sentences are
concatenated and cut into windows of ``context`` tokens, a sentence may cross a window edge, and
every sentence end is a target (the next ``<bos>``; only an end that falls exactly on a window
edge is not, its ``<bos>`` being position 0 of the next window). With aligned windows an end is
a target only when the next sentence fits in the same window: for cfg3f at context 512 about a
third of the ends and none of the sentences longer than ~450 symbols, and models trained that
way learn to stop only 57–62% of the time. ``data.packing=aligned`` packs aligned windows.

A decoded example (``playground-data show task=cfg3f count=1``: eval split, index 0)::

    <bos> 1 2 1 2 3 2 1 1 3 2 2 3 2 2 3 3 1 2 1 1 2 1 2 3 3 3 2 2 3 2 3 1 1 3 3 1 … (249 tokens)
    meta: {"grammar": "cfg3f", "length": 248, "level_sizes": [1, 3, 6, 15, 39, 99, 248],
           "tree": "(22 (21 (16 (13 (11 (8 1 2) (8 1 2)) (12 (7 3 2) (9 1 1) …"}

Evaluation (facts: ../shared/TASKS.md, Lano):

* **generation accuracy** ``gen_acc`` (the primary metric): ``gen_samples`` continuations of
  ``<bos>`` sampled at ``gen_temperature`` with cached decoding, each ending at the next
  ``<bos>``/``<eos>`` or after ``gen_max_len`` tokens; the fraction that stopped and that the
  exact recognizer accepts, with length statistics;
* **KL** between the true next-symbol distribution over {end, terminals} (exact inside +
  prefix probabilities) and the model's, restricted to the same outcomes and renormalised, both
  smoothed by 1e-5, teacher-forced on the held-out eval sentences, averaged over positions;
* **entropies** of both distributions (means over positions) for diagnostics;
  ``position_stats`` gives them per position.

Longer form (``Task.at_length``, length-generalisation eval), at every scale s, 1 included:
the same ``eval_size`` held-out sentences, laid end to end (``<bos> s1 <bos> s2 …``, as in
training's stream windows) in windows of at most s × ``context`` tokens, whole sentences only,
so the KL and entropies are per position of windows s × as long as training's; generation
(``gen_acc``) starts from ``<bos>`` as always, its length bound ``context - 1`` being s × longer.

Sentences longer than ``context - 1`` are redrawn from the same generator so that every example
fits a window (needed by aligned packing and by generation from ``<bos>`` within the context;
kept under stream packing so both see the same sentences); the config refuses a context where
that would happen with probability above 1e-4 under the grammar (for cfg3f at context 512 it is
1.2e-6).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from playground.errors import ConfigError, check
from playground.grammar import (
    Grammar,
    GrammarError,
    accepts_many,
    bracket,
    load_grammar,
    next_symbol_probs,
    sample_frontiers,
    sample_many,
    sample_with_tree,
)
from playground.model import generate
from playground.tasks.base import (
    Example,
    Task,
    TaskConfig,
    Vocab,
    autocast_for,
    pad_batch,
    rng_for,
)

SMOOTH = 1e-5  # added to both distributions before the KL (../shared/TASKS.md)
MAX_OVERFLOW = 1e-4  # largest allowed P(sentence longer than context - 1)


@dataclass
class LanoConfig(TaskConfig):
    name: str = "lano"
    preset: str = "cfg3f"
    grammar: str = "cfg3f"  # a shipped grammar (cfg3f, cfg3j, cfg3k) or a grammar JSON path
    context: int = 512
    eval_size: int = 256  # held-out true sentences for the KL and entropies
    gen_samples: int = 256  # sentences generated from <bos> for generation accuracy
    gen_max_len: int = 0  # longest generated sentence; 0: min(longest possible, context - 1)
    gen_temperature: float = 1.0
    gen_seed: int = 0  # seed of the sampling during evaluation (same samples every eval call)

    difficulty_keys: ClassVar[tuple[str, ...]] = ("grammar",)

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.gen_samples >= 1, "task.gen_samples", self.gen_samples, "an integer >= 1")
        check(self.gen_max_len >= 0, "task.gen_max_len", self.gen_max_len,
              "an integer >= 0 (0: auto)")
        check(self.gen_temperature > 0, "task.gen_temperature", self.gen_temperature,
              "a number > 0")
        check(self.gen_seed >= 0, "task.gen_seed", self.gen_seed, "a non-negative integer")
        try:
            g = load_grammar(self.grammar)
        except GrammarError as err:
            raise ConfigError(f"task.grammar={self.grammar!r} is invalid: {err}") from None
        overflow = float(g.length_pmf()[self.context:].sum())
        check(overflow <= MAX_OVERFLOW, "task.context", self.context,
              f"a context that fits all but a fraction <= {MAX_OVERFLOW:g} of the sentences of "
              f"{g.name} (with <bos>); {overflow:.3g} of them are longer than {self.context - 1}")

    def panel(self) -> str:
        return "lano"

    def row(self) -> tuple[str, float]:
        """The grammar is the row."""
        return self.grammar, float(sum(map(ord, self.grammar)))


class Lano(Task):
    Config = LanoConfig
    primary_metric = "gen_acc"
    packing = "stream"  # the paper's continuous windows (module docstring)

    def __init__(self, cfg: LanoConfig):
        self.grammar: Grammar = load_grammar(cfg.grammar)
        super().__init__(cfg)
        v = self.vocab
        self.outcome_ids = [v.bos] + [v[str(t)] for t in self.grammar.terminals]  # end, terminals
        self._terminal_ids = np.array(self.outcome_ids[1:], np.int32)  # terminal index -> token id
        self._terminal_of = {v[str(t)]: t for t in self.grammar.terminals}
        self._truth: dict[bytes, np.ndarray] = {}  # sentence tokens -> exact next-symbol probs
        self.windows = False  # eval examples: windows of several sentences (at_length)

    def at_length(self, scale: float) -> Lano:
        """Windows of s × context tokens at every scale (the module docstring)."""
        check(scale > 0, "eval.length_scales", scale, "numbers > 0")
        task = Lano(self.scaled_context(scale))
        task.windows = True
        return task

    def eval_examples(self) -> list[Example]:
        sentences = super().eval_examples()
        if not self.windows:
            return sentences
        windows: list[list[Example]] = [[]]
        for ex in sentences:  # greedy: whole sentences, in order, at most context tokens a window
            if windows[-1] and sum(map(len, windows[-1])) + len(ex) > self.cfg.context:
                windows.append([])
            windows[-1].append(ex)
        return [Example(np.concatenate([e.tokens for e in w]), np.ones(sum(map(len, w)), bool),
                        {"grammar": self.grammar.name, "lengths": [e.meta["length"] for e in w]})
                for w in windows]

    def build_vocab(self) -> Vocab:
        return Vocab([str(t) for t in self.grammar.terminals])

    def max_length(self) -> int:
        return min(self.grammar.length_range()[1] + 1, self.cfg.context)

    def gen_max_len(self) -> int:
        return self.cfg.gen_max_len or min(self.grammar.length_range()[1], self.cfg.context - 1)

    def train_steps(self, batch_size: int) -> int:
        return 100_000  # the paper's recipe (batch 96)

    def example(self, split: str, index: int, meta: bool = True) -> Example:
        rng = rng_for(self.cfg.seed, split, index)
        tree = None
        while True:  # redraw the (rare, see the module docstring) sentences that cannot fit
            if split == "train":  # symbol indices per level: the cheapest sample
                levels = sample_frontiers(self.grammar, rng)
            else:
                _, tree = sample_with_tree(self.grammar, rng)
                levels = _levels_of(tree)
                levels[-1] = np.asarray(self.grammar.encode(levels[-1].tolist()), np.int64)
            if self._fits(levels):
                return self._as_example(levels, tree)

    def examples(self, split: str, start: int, stop: int, meta: bool = True) -> list[Example]:
        """Training sentences are sampled together (``sample_many``, several times faster than
        one by one, the same draws); one that does not fit is made again by :meth:`example`,
        which redraws it from its generator."""
        if split != "train":
            return super().examples(split, start, stop, meta)
        indices = range(start, stop)
        levels = sample_many(self.grammar, [rng_for(self.cfg.seed, split, i) for i in indices])
        return [self._as_example(lv) if self._fits(lv) else self.example(split, i, meta)
                for i, lv in zip(indices, levels)]

    def _fits(self, levels: list[np.ndarray]) -> bool:
        return len(levels[-1]) < self.cfg.context

    def _as_example(self, levels: list[np.ndarray], tree=None) -> Example:
        """The example of a sampled tree: ``levels``, one array per level (their lengths are the
        meta's ``level_sizes``), the last the sentence as terminal indices; ``tree``, the tree
        itself (evaluation)."""
        sentence = levels[-1]
        ids = np.empty(len(sentence) + 1, np.int32)
        ids[0], ids[1:] = self.vocab.bos, self._terminal_ids[sentence]
        meta = {"grammar": self.grammar.name, "length": len(sentence),
                "level_sizes": [len(lv) for lv in levels]}
        if tree is not None:
            meta["tree"] = bracket(tree)
        return Example(ids, np.ones(len(ids), bool), meta)

    def describe(self, ex: Example) -> str:
        return f"{self.vocab.decode(ex.tokens)}   (every token is a target)"

    def symbols(self, tokens) -> list[int] | None:
        """Token ids -> terminal symbols; None if a token is not a terminal."""
        out = [self._terminal_of.get(int(t)) for t in tokens]
        return None if any(s is None for s in out) else out  # type: ignore[return-value]

    # -- evaluation ----------------------------------------------------------------------------

    def evaluate(self, model, examples: list[Example], batch_size: int = 64) -> dict[str, float]:
        out = self.generation_metrics(model, batch_size)
        stats = self.position_stats(model, examples, batch_size)
        out.update({"kl": float(stats["kl"].mean()), "ent_true": float(stats["ent_true"].mean()),
                    "ent_model": float(stats["ent_model"].mean()),
                    "mass_outside": float(stats["mass_outside"].mean())})
        return out

    def question_counts(self) -> dict[str, int]:
        """``gen_acc``: one question per generated sample (``task.gen_samples``)."""
        return {"gen_acc": self.cfg.gen_samples}

    def chance(self, metric: str) -> float | None:
        """0 for ``gen_acc`` (a random token string is almost never a sentence of the grammar);
        none for KL and the other distribution measures."""
        return 0.0 if metric == "gen_acc" else None

    def generation_metrics(self, model, batch_size: int = 64) -> dict[str, float]:
        c, v = self.cfg, self.vocab
        gens = generate(model, [[v.bos]] * c.gen_samples, max_new=self.gen_max_len() + 1,
                        stop=(v.bos, v.eos), temperature=c.gen_temperature,
                        batch_size=batch_size, seed=c.gen_seed, pad_id=v.pad)
        candidates = [self.symbols(g.tokens) if g.stopped else None for g in gens]
        valid = [k for k, s in enumerate(candidates) if s]
        verdicts = accepts_many(self.grammar, [candidates[k] for k in valid])
        accepted = sum(verdicts)
        self._last = (gens, dict(zip(valid, verdicts)))  # for eval_records, made when asked
        lengths = np.array([len(g.tokens) for g in gens], float)
        return {"gen_acc": accepted / len(gens),
                "gen_stopped": float(np.mean([g.stopped for g in gens])),
                "gen_len_mean": float(lengths.mean()), "gen_len_std": float(lengths.std()),
                "gen_len_min": float(lengths.min()), "gen_len_max": float(lengths.max()),
                "gen_distinct": len({g.tokens.tobytes() for g in gens}) / len(gens)}

    def eval_records(self) -> list[dict]:
        """The last generation's samples: index, whether it stopped (at ``<bos>``/end), its
        length in tokens, the exact recognizer's verdict (``accepted``: what ``gen_acc``
        counts) and its tokens as text."""
        gens, verdict_of = getattr(self, "_last", ([], {}))
        return [{"sample": k, "stopped": bool(g.stopped), "length": len(g.tokens),
                 "accepted": bool(verdict_of.get(k, False)), "text": self.vocab.decode(g.tokens)}
                for k, g in enumerate(gens)]

    def truth(self, ex: Example) -> np.ndarray:
        """float64[L, 1+T]: row i = the true next-symbol distribution [end, terminals…] after
        the example's first i tokens (row 0 follows ``<bos>``), cached per sentence; a window of
        several sentences (each opening with ``<bos>``) is its sentences' rows end to end."""
        starts = np.flatnonzero(ex.tokens == self.vocab.bos).tolist()
        if len(starts) > 1 or (starts and starts[0] != 0):
            cuts = [*starts, len(ex.tokens)] if starts[0] == 0 else [0, *starts, len(ex.tokens)]
            return np.concatenate([self.truth(Example(ex.tokens[a:b], ex.loss_mask[a:b]))
                                   for a, b in zip(cuts, cuts[1:])])
        key = ex.tokens.tobytes()
        if key not in self._truth:
            sentence = self.symbols(ex.tokens[1:])
            if sentence is None:
                raise ValueError("a Lano example holds a token that is not a terminal")
            self._truth[key] = next_symbol_probs(self.grammar, sentence)
        return self._truth[key]

    @torch.no_grad()
    def position_stats(self, model, examples: list[Example],
                       batch_size: int = 64) -> dict[str, np.ndarray]:
        """Per position of every example (concatenated): ``kl``, ``ent_true``, ``ent_model``,
        ``mass_outside`` (model probability on tokens other than end/terminals) and ``pos``."""
        device = next(model.parameters()).device
        ids = torch.tensor(self.outcome_ids, device=device)
        parts: dict[str, list[np.ndarray]] = {k: [] for k in ("kl", "ent_true", "ent_model",
                                                              "mass_outside", "pos")}
        order = sorted(range(len(examples)), key=lambda i: len(examples[i]))
        was_training = model.training
        model.eval()
        for lo in range(0, len(order), batch_size):
            batch = [examples[i] for i in order[lo : lo + batch_size]]
            tokens = pad_batch([ex.tokens for ex in batch], self.vocab.pad).to(device)
            with autocast_for(device):
                logits = model(tokens).float()  # [B, T, V]
            logp = torch.log_softmax(logits, -1)
            outside = 1 - logp[..., ids].exp().sum(-1)  # [B, T]
            p = torch.softmax(logits[..., ids], -1).double().cpu().numpy()  # [B, T, 1+T']
            for row, ex in enumerate(batch):
                n = len(ex)
                stats = _compare(self.truth(ex), p[row, :n])
                stats["mass_outside"] = outside[row, :n].double().cpu().numpy()
                stats["pos"] = np.arange(n, dtype=float)
                for k, vals in stats.items():
                    parts[k].append(vals)
        model.train(was_training)
        return {k: np.concatenate(vals) for k, vals in parts.items()}


def _compare(q: np.ndarray, p: np.ndarray) -> dict[str, np.ndarray]:
    """KL(q' || p') weighted by q (TASKS.md) and both entropies, per row of [n, outcomes]."""
    k = q.shape[1]
    qs, ps = (q + SMOOTH) / (1 + k * SMOOTH), (p + SMOOTH) / (1 + k * SMOOTH)
    kl = (q * (np.log(qs) - np.log(ps))).sum(1)
    return {"kl": kl, "ent_true": _entropy(q), "ent_model": _entropy(p)}


def _entropy(p: np.ndarray) -> np.ndarray:
    safe = np.where(p > 0, p, 1.0)
    return -(p * np.log(safe)).sum(1)


def _levels_of(tree) -> list[np.ndarray]:
    """The symbols of each level of a parse tree, left to right (the last level: the leaves)."""
    levels, frontier = [], [tree]
    while frontier:
        levels.append(np.array([n[0] if isinstance(n, tuple) else n for n in frontier], np.int64))
        frontier = [c for n in frontier if isinstance(n, tuple) for c in n[1]]
    return levels

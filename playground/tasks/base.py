"""The Task protocol shared by every synthetic task, and the evaluation helpers they share.

A task owns a compact vocabulary and a pure function ``example(split, index) -> Example``: the
example depends only on (task config, ``seed``, split, index), through
``np.random.default_rng([seed, split_id, index])``. Train and eval use disjoint seed streams
(different ``split_id``), so no eval example can appear in training.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import torch

from playground.config import autocast_for
from playground.errors import ConfigError, check

SPLITS = {"train": 0, "eval": 1, "test": 2}
SPECIALS = ("<pad>", "<bos>", "<eos>", "<ans>")


@dataclass
class TaskConfig:
    """Fields every task config has; each task subclasses it with its own knobs."""

    name: str = "?"  # task family: a key of playground.tasks.TASKS
    preset: str = "?"  # label used in run names and reports, e.g. "depo1"
    seed: int = 0  # data seed: every architecture sees byte-identical data
    context: int = 2048  # training window length in tokens
    eval_size: int = 512  # number of eval examples (eval split, indices 0..eval_size-1)

    # the fields that set the difficulty; the first is the heatmap's row axis
    difficulty_keys: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        check(self.seed >= 0, "task.seed", self.seed, "a non-negative integer")
        check(self.context >= 8, "task.context", self.context, "an integer >= 8")
        check(self.eval_size >= 1, "task.eval_size", self.eval_size, "an integer >= 1")

    def difficulty(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.difficulty_keys}

    def panel(self) -> str:
        """The heatmap this config is a cell of (its label): the preset, unless a task says."""
        return self.preset

    def row(self) -> tuple[str, float]:
        """The heatmap row of this config: its label (``N=225``; a list joins with ``-``) and a
        sort key (the value; a list's largest)."""
        key = self.difficulty_keys[0]
        value = getattr(self, key)
        if isinstance(value, (list, tuple)):
            return f"{key}={'-'.join(map(str, value))}", float(max(value))
        return f"{key}={value}", float(value) if str(value).isdigit() else 0.0


@dataclass
class Example:
    tokens: np.ndarray  # int32[L]
    loss_mask: np.ndarray  # bool[L]; True where token i is a target (predicted from tokens < i)
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.tokens)


class Vocab:
    """A task's own vocabulary: ids 0..V-1, the named specials first (``<pad>`` is 0)."""

    def __init__(self, pieces: Sequence[str]):
        pieces = list(SPECIALS) + list(pieces)
        if len(set(pieces)) != len(pieces):
            dup = sorted({p for p in pieces if pieces.count(p) > 1})
            raise ValueError(f"duplicate vocabulary pieces: {dup}")
        self.pieces = pieces
        self.index = {p: i for i, p in enumerate(pieces)}
        self.pad, self.bos, self.eos, self.ans = (self.index[s] for s in SPECIALS)

    def __len__(self) -> int:
        return len(self.pieces)

    def __getitem__(self, piece: str) -> int:
        try:
            return self.index[piece]
        except KeyError:
            raise KeyError(f"{piece!r} is not in the vocabulary") from None

    def ids(self, pieces: Iterable[str]) -> list[int]:
        return [self[p] for p in pieces]

    def decode(self, ids: Iterable[int]) -> str:
        return " ".join(self.pieces[int(i)] for i in ids)


def rng_for(seed: int, split: str, index: int) -> np.random.Generator:
    """The only source of randomness of an example."""
    if split not in SPLITS:
        raise ValueError(f"split={split!r} is invalid: expected one of {sorted(SPLITS)}")
    if index < 0:
        raise ValueError(f"example index must be >= 0, got {index}")
    return np.random.default_rng([seed, SPLITS[split], index])


def check_word_supply(count: int, key: str, value: Any, alphabet: int, min_len: int, max_len: int,
                      what: str, knobs: str) -> None:
    """Distinct random words are drawn by rejection; that stays fast only while at most half of
    the possible words are needed."""
    distinct = sum(alphabet**n for n in range(min_len, max_len + 1))
    check(count <= distinct // 2, key, value,
          f"at most half the {distinct} distinct {what} that {knobs} allow")


def distinct_words(rng: np.random.Generator, n: int, min_len: int, max_len: int,
                   alphabet: int, slack: int,
                   spell: Callable[[int, list[int]], tuple[int, ...]]) -> list[tuple[int, ...]]:
    """n distinct words in the random order they were drawn. Draws come in bulk (2 × missing +
    ``slack`` at a time): a length in [min_len, max_len] and a row of max_len letters from
    range(alphabet), which ``spell(length, row)`` turns into the word's token ids."""
    words: list[tuple[int, ...]] = []
    seen: set[tuple[int, ...]] = set()
    while len(words) < n:
        m = 2 * (n - len(words)) + slack
        lengths = rng.integers(min_len, max_len + 1, size=m).tolist()
        rows = rng.integers(0, alphabet, size=(m, max_len)).tolist()
        for length, row in zip(lengths, rows):
            word = spell(length, row)
            if word not in seen and len(words) < n:
                seen.add(word)
                words.append(word)
    return words


class ExampleBuilder:
    """Accumulates (token ids, is_target) segments and remembers where each one landed."""

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.mask: list[bool] = []

    def add(self, ids: Sequence[int], target: bool = False) -> tuple[int, int]:
        """Append ``ids``; return their [start, end) positions."""
        start = len(self.tokens)
        self.tokens.extend(int(i) for i in ids)
        self.mask.extend([target] * len(ids))
        return start, len(self.tokens)

    def build(self, meta: dict) -> Example:
        return Example(np.asarray(self.tokens, np.int32), np.asarray(self.mask, bool), meta)


class DifficultyLaw:
    """Training difficulty n on {n_min..N} with P(n) ∝ 1/(n + √N) (Depo, Brevo; TASKS.md)."""

    def __init__(self, n_min: int, n_max: int):
        ns = np.arange(n_min, n_max + 1)
        weights = 1.0 / (ns + np.sqrt(n_max))
        self.values, self.probs = ns, weights / weights.sum()

    def sample(self, rng: np.random.Generator) -> int:
        return int(rng.choice(self.values, p=self.probs))


class Task(ABC):
    """A deterministic synthetic task. Subclasses set ``Config`` and ``primary_metric``, and
    say how reports read them: ``secondary_metric`` (shown beside the primary in a heatmap cell,
    e.g. Depo's accuracy at K/2), ``depth_metric`` (the prefix of per-depth accuracies,
    ``<prefix><d>``, for ``playground-report depth``) and ``heatmap`` (False: the task is not
    read as a difficulty × size heatmap, e.g. Capo's bits vs parameters). ``packing`` is how
    its training examples fill windows under ``data.packing=auto`` (``playground.data.packing``):
    ``aligned`` (a window starts at an example; one that does not fit starts the next window)
    or ``stream`` (examples concatenated and cut into windows); each task's docstring says why."""

    Config: ClassVar[type[TaskConfig]]
    primary_metric: ClassVar[str]
    secondary_metric: ClassVar[str | None] = None
    depth_metric: ClassVar[str | None] = None
    heatmap: ClassVar[bool] = True
    packing: ClassVar[str] = "aligned"

    def __init__(self, cfg: TaskConfig):
        self.cfg = cfg
        self.vocab = self.build_vocab()

    @abstractmethod
    def build_vocab(self) -> Vocab: ...

    @abstractmethod
    def example(self, split: str, index: int, meta: bool = True) -> Example:
        """The example; ``meta=False`` may skip building ``meta`` (the training stream does not
        read it) but must give the same tokens and loss mask."""

    def examples(self, split: str, start: int, stop: int, meta: bool = True) -> list[Example]:
        """Examples ``start`` … ``stop - 1``, each exactly ``example(split, i, meta)``; the
        training stream reads them a shard at a time through here, so a task that can make many
        at once faster overrides it (Lano samples its sentences together)."""
        return [self.example(split, i, meta) for i in range(start, stop)]

    @abstractmethod
    def max_length(self) -> int:
        """Upper bound on the length of any example this config can produce."""

    @abstractmethod
    def evaluate(self, model, examples: list[Example], batch_size: int = 64) -> dict[str, float]:
        """Task metrics of ``model`` on ``examples`` (batched, no gradients)."""

    def train_steps(self, batch_size: int) -> int | None:
        """The number of optimizer steps this task prescribes at ``batch_size`` (used when
        ``train.steps=0``), or None when it has no such rule (see also ``train_examples``)."""
        return None

    def train_examples(self) -> int | None:
        """The number of training examples this task prescribes (e.g. Capo: N people × E
        exposures), or None. With ``train.steps=0`` the run trains on exactly the windows these
        examples pack into (``data.packing.count_windows``)."""
        return None

    def at_length(self, scale: float) -> Task:
        """The same task ``scale`` × longer, for length-generalisation evaluation
        (``playground-eval RUN eval.length_scales=1,2,4``): the config ``longer(scale)`` gives,
        with the same seed (so the same deterministic eval stream) and vocabulary, and
        ``context`` × scale. Scale 1 is the task as trained."""
        check(scale > 0, "eval.length_scales", scale, "numbers > 0")
        cfg = self.longer(scale)
        if cfg is None and scale != 1:
            raise ConfigError(f"eval.length_scales is invalid for task {self.cfg.name!r} "
                              f"(preset {self.cfg.preset!r}): it has no longer form (Task.longer)")
        return self if cfg is None or cfg == self.cfg else type(self)(cfg)

    def longer(self, scale: float) -> TaskConfig | None:
        """The config of the ``scale`` × longer variant; each task that has a natural longer
        form overrides it (its docstring says how the length grows) and keeps the vocabulary
        unchanged, so the trained model can read it. The default, None: no longer form."""
        return None

    def scaled_context(self, scale: float, **knobs: Any) -> TaskConfig:
        """Helper for ``longer``: this config with ``context`` × scale and ``knobs`` replaced."""
        return replace(self.cfg, context=max(8, round(self.cfg.context * scale)), **knobs)

    def eval_examples(self) -> list[Example]:
        return [self.example("eval", i) for i in range(self.cfg.eval_size)]

    def eval_records(self) -> list[dict]:
        """One JSON-ready record per scored question of the last ``evaluate`` call, for the
        run directory's ``eval_samples.jsonl`` (``train.save_samples``): what was asked, what
        the model answered and the verdict. The default: none kept."""
        return []

    def question_counts(self) -> dict[str, int]:
        """How many scored questions stand behind each accuracy that ``evaluate`` reports on
        ``eval_examples`` (the n of its binomial eval noise, read by ``playground-report
        findings``), from the eval set alone, without a model. Metrics that are not a fraction
        of questions (KL, losses) are absent. The default: none known."""
        return {}

    def chance(self, metric: str) -> float | None:
        """The expected score of a uniform guess at ``metric``, or None where the metric has no
        such level (KL, losses). The default: none known."""
        return None

    def describe(self, ex: Example) -> str:
        """Human-readable rendering; target tokens are wrapped in [brackets]."""
        return " ".join(
            f"[{self.vocab.pieces[t]}]" if m else self.vocab.pieces[t]
            for t, m in zip(ex.tokens.tolist(), ex.loss_mask.tolist())
        )

    def to_json(self, ex: Example) -> dict:
        return {
            "tokens": ex.tokens.tolist(),
            "pieces": [self.vocab.pieces[t] for t in ex.tokens.tolist()],
            "loss_mask": ex.loss_mask.astype(int).tolist(),
            "meta": ex.meta,
        }


# ----------------------------------------------------------------------------------------------
# Evaluation helpers shared by tasks


def pad_batch(seqs: Sequence[np.ndarray], pad_id: int) -> torch.Tensor:
    """Right-pad int sequences into a LongTensor [B, max_len] (causal models ignore the pad)."""
    out = torch.full((len(seqs), max(len(s) for s in seqs)), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out


@torch.no_grad()
def teacher_forced_predictions(model, examples: list[Example], pad_id: int,
                               batch_size: int) -> list[np.ndarray]:
    """For each example, ``pred[i]`` = argmax token the model predicts at position i from tokens
    < i (``pred[0] = -1``). Teacher forcing with argmax equals greedy decoding of each answer
    token given the true prefix."""
    device = next(model.parameters()).device
    order = sorted(range(len(examples)), key=lambda i: len(examples[i]))
    preds: list[np.ndarray] = [np.empty(0)] * len(examples)
    was_training = model.training
    model.eval()
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        ids = pad_batch([examples[i].tokens for i in idx], pad_id).to(device)
        with autocast_for(device):
            logits = model(ids)  # [B, L, V]
        arg = logits.argmax(-1).cpu().numpy()
        for row, i in enumerate(idx):
            n = len(examples[i])
            preds[i] = np.concatenate([[-1], arg[row, : n - 1]])
    model.train(was_training)
    return preds


def span_counts(examples: list[Example], group: str) -> dict[str, int]:
    """The number of answer spans behind each exact-match accuracy of :func:`span_accuracy`
    (``acc`` and ``acc_<group><value>``) on the same examples."""
    counts: dict[str, int] = defaultdict(int)
    for ex in examples:
        for span in ex.meta["spans"]:
            counts["acc"] += 1
            counts[f"acc_{group}{span[group]}"] += 1
    return dict(counts)


def span_accuracy(examples: list[Example], preds: list[np.ndarray], group: str) -> dict[str, float]:
    """Exact-match and token accuracy over answer spans ``meta["spans"]`` (dicts with ``start``,
    ``end`` and the stratification key ``group``), overall and per group value."""
    exact: dict[Any, list[bool]] = defaultdict(list)
    token: dict[Any, list[float]] = defaultdict(list)
    for ex, pred in zip(examples, preds):
        for span in ex.meta["spans"]:
            ok = pred[span["start"] : span["end"]] == ex.tokens[span["start"] : span["end"]]
            for key in ("all", span[group]):
                exact[key].append(bool(ok.all()))
                token[key].extend(ok.tolist())
    out = {"acc": float(np.mean(exact["all"])), "tok_acc": float(np.mean(token["all"]))}
    for key in sorted(k for k in exact if k != "all"):
        out[f"acc_{group}{key}"] = float(np.mean(exact[key]))
        out[f"tok_acc_{group}{key}"] = float(np.mean(token[key]))
    return out

"""Capo: knowledge capacity. N synthetic people, each with a bioS biography seen E times in
training; the capacity eval turns the model's losses on those people into bits of knowledge.

People are a pure function of (task.seed, person index): full names are distinct (a keyed
permutation of the 400·400·1000 first × middle × last combinations, so person i is the same in
every population that includes it), and birth date, birth city, university, major, employer
(which fixes the working city) and pronoun are drawn uniformly and independently by hashing.

A biography (``playground-data show task=capo_tiny split=eval count=1``; the spans that the
capacity eval scores are in brackets; the loss is on every token)::

    [Adriana Benjamin Sewell] was delivered in a hospital in [Hialeah, FL]. [She] joined
    [Emerson Electric] after graduating. She has a workplace located in St. Louis, MO. She read
    [Liberal Arts] at university. She came into the world on [April 24, 1943]. She graduated
    from [Stanford University].

One sentence per attribute plus one for the employer's city (always right after the employer's,
so it cannot hint at the employer); the first sentence starts with the full name, the others with
the pronoun; every exposure draws fresh templates (``capo_templates.py``) and a fresh order.

Training stream: example k is exposure ``k // N`` of person ``perm_{k // N}[k % N]`` (a fresh
permutation per pass), so indices 0..N·E-1 hold every biography exactly E times; full LM loss.
Eval: teacher-forced p1 (full-name tokens) and p2 (the six attribute values) in nats, then
bits = N·log2(N0/e^p1) + N·log2(S0/e^p2) (Part 3.3, Def. 4.3). Facts: ../shared/TASKS.md (Capo).

Packing (``data.packing=auto``): ``aligned``. Biographies are short and independent; cut by a
window edge, an attribute would lose the name it belongs to (the answer must not be cut from its
question), and the capacity eval scores whole biographies.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from playground.config import autocast_for
from playground.errors import check
from playground.tasks.base import Example, Task, TaskConfig, Vocab, pad_batch, rng_for
from playground.tasks.capo_people import (
    DAYS,
    FIRST_YEAR,
    LN2,
    MONTHS,
    YEARS,
    capacity_bits,
    capacity_upper,
    facts,
    load_fields,
    people,
)
from playground.tasks.capo_templates import (
    GLUED,
    PRONOUN_SLOTS,
    SUBJECT,
    Template,
    all_templates,
    detokenize,
    tokenize,
)

ATTRIBUTES = ("birth_date", "birth_city", "university", "major", "employer", "pronoun")
UNITS = (("birth_date",), ("birth_city",), ("university",), ("major",), ("employer", "work_city"))
# sentence kind -> (person column, field list) of its value; birth dates are built from 3 columns
VALUE_OF = {"birth_city": ("city", "city"), "university": ("university", "university"),
            "major": ("major", "major"), "employer": ("company", "company"),
            "work_city": ("company", "company_city")}
PASS_STREAM = 1000  # seed stream of the training passes' permutations (disjoint from splits)


def extensions(values: list[tuple[int, ...]]) -> list[list[int]]:
    """For each value (a token tuple), the tokens that continue it into a longer value of the
    same list (``Engineering`` -> ``Management``); empty for most values."""
    children: dict[tuple[int, ...], set[int]] = defaultdict(set)
    for v in values:
        for j in range(len(v)):
            children[v[:j]].add(v[j])
    return [sorted(children.get(v, ())) for v in values]


def end_nll(log_continue: float) -> float:
    """-ln(1 - p) for ln p = ``log_continue``, computed stably (capped at p = 1 - 1e-12)."""
    x = min(log_continue, math.log1p(-1e-12))
    return -(math.log(-math.expm1(x)) if x > -LN2 else math.log1p(-math.exp(x)))


# -- the task --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def max_biography_length() -> int:
    """A true bound on a biography's length in tokens (<bos> included)."""
    f, pool = load_fields(), all_templates()
    longest = {k: max(len(tokenize(v)) for v in vals) for k, vals in
               (("birth_city", f.city), ("university", f.university), ("major", f.major),
                ("employer", f.company), ("work_city", f.company_city))}
    longest["birth_date"] = max(len(tokenize(f"{m} {DAYS}, 2000")) for m in MONTHS)
    name = sum(max(len(tokenize(n)) for n in names) for names in (f.first, f.middle, f.last))
    words = sum(max(len(t.words(g)) - 1 for t in temps for g in (0, 1)) for temps in pool.values())
    return 1 + name + len(pool) - 1 + words + sum(longest.values())


@dataclass
class CapoConfig(TaskConfig):
    name: str = "capo"
    preset: str = "capo"
    N: int = 100_000  # people
    E: int = 100  # exposures: training indices 0..N·E-1 hold every biography exactly E times
    context: int = 512
    eval_size: int = 4096  # people scored by the capacity eval (all of them when N is smaller)

    difficulty_keys: ClassVar[tuple[str, ...]] = ("N", "E")

    def __post_init__(self) -> None:
        super().__post_init__()
        n0 = load_fields().n_names
        check(2 <= self.N <= n0, "task.N", self.N, f"an integer in [2, {n0}] (distinct full names)")
        check(self.E >= 1, "task.E", self.E, "an integer >= 1")
        need = max_biography_length()
        check(self.context >= need, "task.context", self.context,
              f"an integer >= {need} (the longest biography)")


class Capo(Task):
    Config = CapoConfig
    primary_metric = "bits"
    heatmap = False  # read as learned bits vs parameters (playground-report capo)

    def __init__(self, cfg: CapoConfig):
        self.fields, self.templates = load_fields(), all_templates()
        super().__init__(cfg)
        v = self.vocab
        lists = ("first", "middle", "last", "city", "university", "major", "company",
                 "company_city")
        self._values = {k: [self._ids(x) for x in getattr(self.fields, k)] for k in lists}
        self._ext = {k: extensions(self._values[table]) for k, (_, table) in VALUE_OF.items()}
        self._parts = {k: [self._compile(t) for t in temps] for k, temps in self.templates.items()}
        self._first_pool = {k: [i for i, t in enumerate(temps) if not t.has_pronoun]
                            for k, temps in self.templates.items()}
        self._subject = [v[s] for s in SUBJECT]
        self._pronoun = {slot: [v[w] for w in forms] for slot, forms in PRONOUN_SLOTS.items()}
        self._period = v["."]
        self._population: dict[str, np.ndarray] | None = None
        self._passes: dict[int, np.ndarray] = {}

    def build_vocab(self) -> Vocab:
        """Every word of the field lists, dates, pronouns and templates, sorted: a closed vocabulary
        that depends only on the data files and the template pool."""
        f = self.fields
        words = set(GLUED) | set(SUBJECT) | {w for forms in PRONOUN_SLOTS.values() for w in forms}
        for text in (*f.first, *f.middle, *f.last, *f.city, *f.university, *f.major, *f.company,
                     *f.company_city, *MONTHS):
            words.update(tokenize(text))
        words.update(str(d) for d in range(1, DAYS + 1))
        words.update(str(FIRST_YEAR + y) for y in range(YEARS))
        for temps in self.templates.values():
            words.update(w for t in temps for part in t.parts
                         if isinstance(part, tuple) for w in part)
        return Vocab(sorted(words))

    def _ids(self, text: str) -> tuple[int, ...]:
        return tuple(self.vocab.ids(tokenize(text)))

    def _compile(self, t: Template) -> list:
        return [self.vocab.ids(p) if isinstance(p, tuple) else p for p in t.parts]

    def max_length(self) -> int:
        return max_biography_length()

    # -- people ----------------------------------------------------------------------------------

    def population(self) -> dict[str, np.ndarray]:
        """All N people as columns of field indices (computed once; a cache of :func:`people`)."""
        if self._population is None:
            self._population = people(self.cfg.seed, np.arange(self.cfg.N), self.fields)
        return self._population

    def person(self, i: int) -> dict[str, int]:
        return {k: int(col[i]) for k, col in self.population().items()}

    def facts(self, i: int) -> dict[str, str]:
        """Person i's attributes as text."""
        return facts(self.person(i), self.fields)

    def n_eval(self) -> int:
        return min(self.cfg.eval_size, self.cfg.N)

    def _pass_order(self, e: int) -> np.ndarray:
        if e not in self._passes:  # keep two passes: a shard can straddle a pass boundary
            if len(self._passes) >= 2:
                self._passes.pop(next(iter(self._passes)))
            rng = np.random.default_rng([self.cfg.seed, PASS_STREAM, e])
            self._passes[e] = rng.permutation(self.cfg.N)
        return self._passes[e]

    def person_of(self, split: str, index: int) -> tuple[int, int | None]:
        """(person, exposure) of an example: the training stream's pass structure, or for eval
        and test the evenly spaced sample of n_eval people (exposure None)."""
        N = self.cfg.N
        if split == "train":
            return int(self._pass_order(index // N)[index % N]), index // N
        n = self.n_eval()
        return (index % n) * N // n, None

    # -- biographies -----------------------------------------------------------------------------

    def _value(self, kind: str, p: dict[str, int]) -> tuple[int, ...]:
        if kind == "birth_date":
            return self._ids(f"{MONTHS[p['month']]} {p['day'] + 1}, {FIRST_YEAR + p['year']}")
        col, table = VALUE_OF[kind]
        return self._values[table][p[col]]

    def _sentence(self, out: list[int], parts: list, subject, value, gender: int) -> int:
        """Append one sentence; return where its value starts."""
        start = -1
        for part in parts:
            if part == "S":
                out.extend(subject)
            elif part == "X":
                start = len(out)
                out.extend(value)
            elif isinstance(part, str):
                out.append(self._pronoun[part][gender])
            else:  # a value ending in "." (Washington D.C.) takes the sentence's period
                out.extend(part[1:] if part[0] == out[-1] == self._period else part)
        return start

    def render(self, i: int, rng: np.random.Generator) -> tuple[list[int], dict, list]:
        """Person i's biography with fresh templates and order drawn from ``rng``: token ids,
        {name / attribute / work_city: [start, end)} and the sentences as (kind, template
        index into ``TEMPLATES[kind]``) in order."""
        p, v = self.person(i), self._values
        gender = p["pronoun"]
        name = v["first"][p["first"]] + v["middle"][p["middle"]] + v["last"][p["last"]]
        kinds = [k for u in rng.permutation(len(UNITS)).tolist() for k in UNITS[u]]
        out, spans, chosen = [self.vocab.bos], {"name": [1, 1 + len(name)]}, []
        for j, kind in enumerate(kinds):
            pool = self._first_pool[kind] if j == 0 else range(len(self._parts[kind]))
            chosen.append(pool[int(rng.integers(len(pool)))])
            parts = self._parts[kind][chosen[-1]]
            if j == 1:
                spans["pronoun"] = [len(out), len(out) + 1]
            value = self._value(kind, p)
            start = self._sentence(out, parts, name if j == 0 else [self._subject[gender]],
                                   value, gender)
            spans[kind] = [start, start + len(value)]
        return out, spans, list(zip(kinds, chosen))

    def example(self, split: str, index: int, meta: bool = True) -> Example:
        person, exposure = self.person_of(split, index)
        tokens, spans, sentences = self.render(person, rng_for(self.cfg.seed, split, index))
        mask = np.ones(len(tokens), bool)
        mask[0] = False  # full LM loss on the biography; <bos> only separates
        info = {"person": person, "exposure": exposure, "sentences": sentences, "spans": spans,
                "facts": self.facts(person)} if meta else {}
        return Example(np.asarray(tokens, np.int32), mask, info)

    def eval_examples(self) -> list[Example]:
        return [self.example("eval", j) for j in range(self.n_eval())]

    def text(self, ids) -> str:
        """Decoded text; a <bos> inside ``ids`` starts a new line (one biography per line)."""
        bios: list[list[str]] = []
        for i in ids:
            if int(i) == self.vocab.bos or not bios:
                bios.append([])
            if int(i) not in (self.vocab.bos, self.vocab.pad):
                bios[-1].append(self.vocab.pieces[int(i)])
        return "\n".join(detokenize(b) for b in bios if b)

    def describe(self, ex: Example) -> str:
        """The biography's text with the spans that the capacity eval scores in [brackets]."""
        starts = {s for k, (s, _) in ex.meta["spans"].items() if k != "work_city"}
        ends = {e for k, (_, e) in ex.meta["spans"].items() if k != "work_city"}
        text = ""
        for i, t in enumerate(ex.tokens[1:].tolist(), start=1):
            piece = (("[" if i in starts else "") + self.vocab.pieces[t]
                     + ("]" if i + 1 in ends else ""))
            text += piece if not text or self.vocab.pieces[t] in GLUED else " " + piece
        return text

    def to_json(self, ex: Example) -> dict:
        return {**super().to_json(ex), "text": self.text(ex.tokens)}

    def train_examples(self) -> int:
        """The N·E biographies of the paper's E exposures of every person."""
        return self.cfg.N * self.cfg.E

    # -- capacity evaluation ----------------------------------------------------------------------

    def used_token_ids(self) -> np.ndarray:
        """Vocabulary rows that occur in this population's training biographies: <bos>, the
        template words, pronouns, and the tokens of the values the N people actually hold."""
        pop, v = self.population(), self._values
        used = {self.vocab.bos, *self._subject, *(i for ids in self._pronoun.values() for i in ids)}
        used.update(i for parts in self._parts.values() for t in parts for p in t
                    if not isinstance(p, str) for i in p)
        for col, table in (("first", "first"), ("middle", "middle"), ("last", "last"),
                           *VALUE_OF.values()):
            used.update(i for j in np.unique(pop[col]).tolist() for i in v[table][j])
        used.update(self.vocab[m] for m in np.array(MONTHS)[np.unique(pop["month"])])
        used.update(self.vocab[str(d + 1)] for d in np.unique(pop["day"]).tolist())
        used.update(self.vocab[str(FIRST_YEAR + y)] for y in np.unique(pop["year"]).tolist())
        used.add(self.vocab[","])
        return np.array(sorted(used))

    def params_used(self, model) -> int:
        """Parameters that can hold knowledge: the non-embedding parameters plus the embedding
        (and, untied, output) rows of the tokens that occur in training (``used_token_ids``)."""
        counts, cfg = model.param_counts(), model.cfg
        rows = len(self.used_token_ids()) * (1 if cfg.tie_embeddings else 2)
        return int(counts["non_embedding"] + rows * cfg.d_model)

    @torch.no_grad()
    def scores(self, model, examples: list[Example], batch_size: int) -> list[dict[str, float]]:
        """Teacher-forced scores of each biography (see :meth:`score_one`), in batches of
        similar length (right padding: a causal model never sees it)."""
        device = next(model.parameters()).device
        order = sorted(range(len(examples)), key=lambda i: len(examples[i]))
        out: list = [None] * len(examples)
        was_training = model.training
        model.eval()
        for lo in range(0, len(order), batch_size):
            idx = order[lo : lo + batch_size]
            ids = pad_batch([examples[i].tokens for i in idx], self.vocab.pad).to(device)  # [B, L]
            with autocast_for(device):
                logits = model(ids)[:, :-1].float()  # [B, L-1, V]; row j predicts token j+1
            logp = torch.log_softmax(logits, -1).cpu()
            target = ids[:, 1:].cpu()
            tok = logp.gather(-1, target.unsqueeze(-1)).squeeze(-1).double().numpy()  # [B, L-1]
            hit = (logits.argmax(-1).cpu() == target).numpy()
            for row, i in enumerate(idx):
                out[i] = self.score_one(examples[i], logp[row], tok[row], hit[row])
        model.train(was_training)
        return out

    def score_one(self, ex: Example, logp: torch.Tensor, tok: np.ndarray, hit: np.ndarray) -> dict:
        """NLL (nats) of the name and of each attribute's value, first-value-token hits, and the
        summed token NLL. A value that is a prefix of a longer value of its list (Engineering /
        Engineering Management) also pays -ln(1 - p_continue) at the token after it, so the
        score is the NLL of the value itself: the uniform prior scores exactly ln(list size)."""
        n, spans, p = len(ex) - 1, ex.meta["spans"], self.person(ex.meta["person"])
        out = {"nll": float(tok[:n].sum()) * -1, "tokens": n, "value_ends": 0.0}
        for key in ("name", *ATTRIBUTES):
            s, e = spans[key]
            out[key] = -float(tok[s - 1 : e - 1].sum())
            if key != "name":
                out[f"hit_{key}"] = bool(hit[s - 1])
            ext = self._ext[key][p[VALUE_OF[key][0]]] if key in VALUE_OF else []
            if ext:
                end = end_nll(float(torch.logsumexp(logp[e - 1, ext], 0)))
                out[key] += end
                out["value_ends"] += end
        return out

    def evaluate(self, model, examples: list[Example], batch_size: int = 64) -> dict[str, float]:
        """p1, p2 (nats, means over the scored people), bits, its upper bound, bits per used
        parameter, per-attribute p2 and first-value-token accuracy, and the mean token loss."""
        rows = self.scores(model, examples, batch_size)
        mean = lambda key: float(np.mean([r[key] for r in rows]))
        p1, p2_each = mean("name"), {k: mean(k) for k in ATTRIBUTES}
        p2 = sum(p2_each.values())
        N, params = self.cfg.N, self.params_used(model)
        bits, upper = capacity_bits(p1, p2, N, self.fields), capacity_upper(N, self.fields)
        out = {"bits": bits, "bits_per_param": bits / params, "bits_upper": upper,
               "bits_fraction": bits / upper, "params_used": float(params), "p1": p1, "p2": p2,
               "p2_tokens": p2 - mean("value_ends"),
               "loss": sum(r["nll"] for r in rows) / sum(r["tokens"] for r in rows),
               "acc": float(np.mean([mean(f"hit_{k}") for k in ATTRIBUTES]))}
        out.update({f"p2_{k}": v for k, v in p2_each.items()})
        out.update({f"acc_{k}": mean(f"hit_{k}") for k in ATTRIBUTES})
        return out

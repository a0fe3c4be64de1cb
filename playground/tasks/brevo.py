"""Brevo: reasoning breadth. List every vertex a query depends on, in a topological order.

A random DAG on n named vertices: in a random vertex order the first L ~ U[1, (n-1)//4 + 1] are
sources; every later vertex gets p ~ U[1, min(4, #eligible)] parents among earlier vertices whose
out-degree is still < 4. Layout (edges ``parent child`` shuffled)::

    <bos> p1 c1 p2 c2 … <query> q <ans> a1 … ap <eos>

The answer lists all ancestors of q (vertices q recursively depends on) in a topological order
with random tie-breaking; loss on ``<ans>``, the answer and ``<eos>``. Brevo1 names are single
tokens ``v1..vN``; Brevo2 names are words of 2–4 symbols over V=4 (inner ``c*``, end ``e*``).

A decoded example (``playground-data show task=brevo1 task.N=6``, eval split)::

    <bos> v5 v6 v2 v5 v2 v4 v4 v6 v1 v5 <query> v6 [<ans>] [v2] [v1] [v5] [v4] [<eos>]

Evaluation is generative (greedy after ``<ans>`` until ``<eos>``, cached decoding): correct iff
the generated vertices are exactly the ancestor set, each once, in a topological order.
Facts and the two documented choices (query rule, whether q ends the answer): ../shared/TASKS.md.

Longer form (``Task.at_length``, length-generalisation eval): at scale s the DAG has s × N
vertices and the context is s × longer. Only for word names (Brevo2): token names (Brevo1) are
the vocabulary ``v1..vN``, so a larger N would need tokens the model never saw.

Packing (``data.packing=auto``): ``aligned``. An example is one independent DAG with its query;
cut by a window edge, the answer would lose the edges it is derived from (the answer must not be
cut from its question).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from playground.errors import check
from playground.model import generate
from playground.tasks.base import (
    DifficultyLaw,
    Example,
    Task,
    TaskConfig,
    Vocab,
    check_word_supply,
    rng_for,
)

QUERY_RULES = ("paper", "last")
DEPTH_BUCKETS = ("1", "2", "3", "4", "5+")


@dataclass
class BrevoConfig(TaskConfig):
    name: str = "brevo"
    preset: str = "brevo1"
    N: int = 70  # most vertices; eval uses n = N
    names: str = "token"  # token: v1..vN (Brevo1) | word: multi-symbol words (Brevo2)
    V: int = 4  # symbols for word names (inner and end sets)
    min_len: int = 2  # word name length range (symbols)
    max_len: int = 4
    n_min: int = 3
    max_parents: int = 4
    max_children: int = 4
    # paper: uniform over the last quarter | last: the last vertex (official script)
    query: str = "paper"
    include_query: bool = False  # official script: the answer ends with q itself
    context: int = 1024

    difficulty_keys: ClassVar[tuple[str, ...]] = ("N",)

    def __post_init__(self) -> None:
        super().__post_init__()
        check(self.names in ("token", "word"), "task.names", self.names, "token or word")
        check(3 <= self.n_min <= self.N, "task.n_min", self.n_min, f"3 <= n_min <= N (N={self.N})")
        check(self.query in QUERY_RULES, "task.query", self.query, f"one of {QUERY_RULES}")
        check(self.max_parents >= 1, "task.max_parents", self.max_parents, "an integer >= 1")
        check(self.max_children >= 1, "task.max_children", self.max_children, "an integer >= 1")
        if self.names == "word":
            check(1 <= self.min_len <= self.max_len, "task.min_len", self.min_len,
                  f"1 <= min_len <= max_len (max_len={self.max_len})")
            check_word_supply(self.N, "task.N", self.N, self.V, self.min_len, self.max_len, "names",
                              "V, min_len, max_len")


@dataclass
class Dag:
    order: list[int]  # vertex ids in generation order (a topological order)
    parents: dict[int, list[int]]
    sources: int


def sample_dag(rng: np.random.Generator, n: int, max_parents: int, max_children: int) -> Dag:
    """The DAG rule of TASKS.md on vertices 0..n-1 (ids are positions in a random order)."""
    order = rng.permutation(n).tolist()
    sources = int(rng.integers(1, (n - 1) // 4 + 2))
    out_degree = dict.fromkeys(order, 0)
    parents: dict[int, list[int]] = {v: [] for v in order}
    eligible = order[:sources]  # earlier vertices whose out-degree is < max_children, in order
    draws = rng.random((n, max_parents + 1)).tolist()  # all randomness of the loop, drawn at once
    for i in range(sources, n):
        if not eligible:
            raise RuntimeError("no eligible parent: max_children too small for this n")
        u, m = draws[i], len(eligible)
        chosen = distinct_indices(u[1 : 2 + int(u[0] * min(max_parents, m))], m)
        saturated = False
        for j in chosen:
            parents[order[i]].append(eligible[j])
            out_degree[eligible[j]] += 1
            saturated |= out_degree[eligible[j]] >= max_children
        if saturated:
            eligible = [v for v in eligible if out_degree[v] < max_children]
        eligible.append(order[i])
    return Dag(order, parents, sources)


def distinct_indices(uniforms: list[float], m: int) -> list[int]:
    """len(uniforms) distinct indices of range(m), uniformly without replacement, sorted: the
    k-th draw picks among the m-k indices not taken yet."""
    chosen: list[int] = []
    for k, x in enumerate(uniforms):
        j = int(x * (m - k))
        for c in chosen:  # sorted: shift past every taken index at or below j
            if c <= j:
                j += 1
        chosen.append(j)
        chosen.sort()
    return chosen


def ancestors(parents: dict[int, list[int]], q: int) -> set[int]:
    seen: set[int] = set()
    stack = list(parents[q])
    while stack:
        u = stack.pop()
        if u not in seen:
            seen.add(u)
            stack.extend(parents[u])
    return seen


def random_topological(rng: np.random.Generator, parents: dict[int, list[int]],
                       keep: set[int]) -> list[int]:
    """A topological order of ``keep`` (closed under parents), ties broken uniformly (Kahn)."""
    waiting = {v: len(parents[v]) for v in keep}
    children: dict[int, list[int]] = defaultdict(list)
    for v in keep:
        for u in parents[v]:
            children[u].append(v)
    ready = sorted(v for v, k in waiting.items() if k == 0)
    out = []
    while ready:
        v = ready.pop(int(rng.integers(len(ready))))
        out.append(v)
        for c in children[v]:
            waiting[c] -= 1
            if waiting[c] == 0:
                ready.append(c)
    return out


def source_distance(parents: dict[int, list[int]], q: int) -> int:
    """Shortest number of parent steps from q to a vertex without parents (its dependency depth)."""
    frontier, depth = {q}, 0
    while not any(not parents[v] for v in frontier):
        frontier = {u for v in frontier for u in parents[v]}
        depth += 1
    return depth


def is_valid_answer(answer: list[int], parents: dict[int, list[int]], expected: set[int]) -> bool:
    """True iff ``answer`` lists exactly ``expected``, each once, every vertex after its parents."""
    if len(answer) != len(set(answer)) or set(answer) != expected:
        return False
    placed: set[int] = set()
    for v in answer:
        if not (set(parents[v]) & expected) <= placed:
            return False
        placed.add(v)
    return True


class Brevo(Task):
    Config = BrevoConfig
    primary_metric = "acc"
    depth_metric = "acc_depth"

    def __init__(self, cfg: BrevoConfig):
        super().__init__(cfg)
        self._law = DifficultyLaw(cfg.n_min, cfg.N)

    def longer(self, scale: float) -> BrevoConfig | None:
        """s × N vertices, s × the context; none with token names (they are the vocabulary
        v1..vN, so a larger N needs tokens the model never saw)."""
        if self.cfg.names == "token":
            return None
        return self.scaled_context(scale, N=max(3, round(self.cfg.N * scale)))

    def build_vocab(self) -> Vocab:
        c = self.cfg
        if c.names == "token":
            names = [f"v{i}" for i in range(1, c.N + 1)]
        else:
            names = [f"c{i}" for i in range(c.V)] + [f"e{i}" for i in range(c.V)]
        return Vocab(["<query>", *names])

    def name_len(self) -> int:
        return 1 if self.cfg.names == "token" else self.cfg.max_len

    def max_length(self) -> int:
        c, w = self.cfg, self.name_len()
        edges = c.max_parents * c.N
        return 2 * edges * w + 2 * w + 4 + c.N * w

    def _names(self, rng: np.random.Generator, n: int) -> list[tuple[int, ...]]:
        c, v = self.cfg, self.vocab
        if c.names == "token":
            return [(v[f"v{i + 1}"],) for i in rng.choice(c.N, size=n, replace=False).tolist()]
        names: list[tuple[int, ...]] = []
        while len(names) < n:
            length = int(rng.integers(c.min_len, c.max_len + 1))
            body = rng.integers(0, c.V, size=length).tolist()
            name = tuple(v[f"c{s}"] for s in body[:-1]) + (v[f"e{body[-1]}"],)
            if name not in names:
                names.append(name)
        return names

    def _query(self, rng: np.random.Generator, dag: Dag) -> int:
        n = len(dag.order)
        lo = n - 1 if self.cfg.query == "last" else max(dag.sources, (3 * n) // 4)
        return dag.order[int(rng.integers(lo, n))]

    def example(self, split: str, index: int, meta: bool = True) -> Example:
        c, v = self.cfg, self.vocab
        rng = rng_for(c.seed, split, index)
        n = self._law.sample(rng) if split == "train" else c.N
        dag = sample_dag(rng, n, c.max_parents, c.max_children)
        names = self._names(rng, n)
        edges = [(u, w) for w in dag.order for u in dag.parents[w]]
        tokens = [v.bos]
        for i in rng.permutation(len(edges)).tolist():
            tokens += names[edges[i][0]] + names[edges[i][1]]
        q = self._query(rng, dag)
        anc = ancestors(dag.parents, q)
        answer = random_topological(rng, dag.parents, anc) + ([q] if c.include_query else [])
        tokens += [v["<query>"], *names[q], v.ans]
        start = len(tokens)
        tokens += [t for u in answer for t in names[u]] + [v.eos]
        mask = np.zeros(len(tokens), bool)
        mask[start - 1 :] = True  # <ans>, the answer, <eos>
        info = self._meta(dag, names, edges, q, anc, answer, start) if meta else {}
        return Example(np.asarray(tokens, np.int32), mask, info)

    def _meta(self, dag: Dag, names, edges, q: int, anc: set[int], answer: list[int],
              start: int) -> dict:
        name = [self.vocab.decode(x) for x in names]
        return {"n": len(dag.order), "edges": [[name[u], name[w]] for u, w in edges],
                "query": name[q],
                "ancestors": sorted(name[u] for u in anc), "answer": [name[u] for u in answer],
                "depth": source_distance(dag.parents, q), "answer_start": start,
                "order": [name[u] for u in dag.order], "sources": dag.sources}

    # -- evaluation ----------------------------------------------------------------------------

    def split_names(self, ids: list[int]) -> list[str] | None:
        """Decode generated ids into vertex names; None if they do not form whole names."""
        pieces = [self.vocab.pieces[i] for i in ids]
        if self.cfg.names == "token":
            return pieces if all(p.startswith("v") for p in pieces) else None
        names, cur = [], []
        for p in pieces:
            if not p.startswith(("c", "e")):
                return None
            cur.append(p)
            if p.startswith("e"):
                names.append(" ".join(cur))
                cur = []
        return None if cur else names

    def judge(self, ex: Example, generated: list[int]) -> bool:
        """Correct iff the generated names are the ancestor set, once each,
        topologically ordered."""
        names = self.split_names(generated)
        if names is None:
            return False
        expected = set(ex.meta["ancestors"]) | ({ex.meta["query"]}
                                                if self.cfg.include_query else set())
        parents: dict[str, list[str]] = defaultdict(list)
        for u, w in ex.meta["edges"]:
            parents[w].append(u)
        if self.cfg.include_query and (not names or names[-1] != ex.meta["query"]):
            return False
        return is_valid_answer(names, parents, expected)

    def evaluate(self, model, examples: list[Example], batch_size: int = 64) -> dict[str, float]:
        prompts = [ex.tokens[: ex.meta["answer_start"]] for ex in examples]
        max_new = (self.cfg.N + 1) * self.name_len() + 1
        outs = generate(model, prompts, max_new, stop=[self.vocab.eos], batch_size=batch_size,
                        pad_id=self.vocab.pad)
        by_depth: dict[str, list[bool]] = defaultdict(list)
        for ex, out in zip(examples, outs):
            ok = out.stopped and self.judge(ex, out.tokens.tolist())
            by_depth["all"].append(ok)
            by_depth[DEPTH_BUCKETS[min(ex.meta["depth"], 5) - 1]].append(ok)
        metrics = {"acc": float(np.mean(by_depth["all"]))}
        for bucket in DEPTH_BUCKETS:
            if by_depth[bucket]:
                metrics[f"acc_depth{bucket}"] = float(np.mean(by_depth[bucket]))
        return metrics

    def question_counts(self) -> dict[str, int]:
        """``acc``: one question per eval example; ``acc_depth<d>``: those of that depth bucket."""
        examples = self.eval_examples()
        out = {"acc": len(examples)}
        for ex in examples:
            key = f"acc_depth{DEPTH_BUCKETS[min(ex.meta['depth'], 5) - 1]}"
            out[key] = out.get(key, 0) + 1
        return out

    def chance(self, metric: str) -> float | None:
        """0 for an accuracy: a guess must name every needed vertex in a valid order."""
        return 0.0 if metric.startswith("acc") else None

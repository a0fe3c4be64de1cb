"""Lano: examples recomputed from the tokens and the meta tree alone (nltk, the grammar JSON),
the config checks, and the evaluation end to end through models whose answers are known: the
true distribution itself (KL 0, every sample accepted) and a uniform model (KL by hand)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import task_from
from nltk import Tree as NTree
from test_grammar_oracle import nltk_accepts_and_count
from torch import nn

from playground.errors import ConfigError
from playground.grammar import load_grammar, next_symbol_probs, random_grammar
from playground.layers.seq import Cache
from playground.run import rundir as runs
from playground.run.train import run

PRESETS = ["cfg3f", "cfg3j", "cfg3k"]
DATA = Path(__file__).parents[1] / "playground" / "grammar" / "data"  # the JSON files, read raw


def json_rules(name: str) -> dict[str, set[tuple[str, ...]]]:
    """symbol -> rules as strings, straight from the shipped JSON file."""
    with open(DATA / f"{name}.json") as f:
        data = json.load(f)
    return {str(e["symbol"]): {tuple(map(str, r)) for r in e["rules"]}
            for lv in data["levels"] for e in lv}


@pytest.mark.parametrize("preset", PRESETS)
def test_eval_examples_recomputed_from_tokens_and_tree(preset):
    task = task_from(f"task={preset}")
    rules = json_rules(preset)
    assert task.vocab.pieces == ["<pad>", "<bos>", "<eos>", "<ans>", "1", "2", "3"]
    for index in range(3):
        ex = task.example("eval", index)
        pieces = task.vocab.decode(ex.tokens).split()
        assert pieces[0] == "<bos>" and ex.loss_mask.all()
        tree = NTree.fromstring(ex.meta["tree"])
        assert tree.leaves() == pieces[1:] and ex.meta["length"] == len(pieces) - 1
        for sub in tree.subtrees():
            kids = tuple(k.label() if isinstance(k, NTree) else k for k in sub)
            assert kids in rules[sub.label()]
        depths = [len([p for p in tree.treepositions() if len(p) == d])
                  for d in range(tree.height())]
        assert ex.meta["level_sizes"] == depths and len(depths) == task.grammar.depth + 1


def test_train_examples_are_sentences_by_nltk():
    task = task_from("task=cfg3f")
    g = load_grammar("cfg3f")
    for index in range(2):
        ex = task.example("train", index)
        sentence = [int(p) for p in task.vocab.decode(ex.tokens[1:]).split()]
        assert nltk_accepts_and_count(g, sentence, count=False)[0]
        assert ex.meta["length"] == len(sentence) and "tree" not in ex.meta
        assert ex.meta["level_sizes"][0] == 1 and ex.meta["level_sizes"][-1] == len(sentence)
    # the same draws with or without the tree: identical sentences across the train/eval code paths
    from playground.grammar import sample_levels, sample_with_tree
    from playground.tasks.base import rng_for

    a = sample_levels(g, rng_for(0, "eval", 5))[-1].tolist()
    b = sample_with_tree(g, rng_for(0, "eval", 5))[0].tolist()
    assert a == b == [int(p) for p in task.vocab.decode(task.example("eval", 5).tokens[1:]).split()]


def test_config_errors_name_the_key(tmp_path):
    with pytest.raises(ConfigError, match="task.grammar='cfg9z'"):
        task_from("task=cfg3f", "task.grammar=cfg9z")
    with pytest.raises(ConfigError, match=r"task.context=300 .* longer than 299"):
        task_from("task=cfg3f", "task.context=300")
    with pytest.raises(ConfigError, match="task.gen_samples"):
        task_from("task=cfg3f", "task.gen_samples=0")
    assert (task_from("task=cfg3f").max_length() == 512
            and task_from("task=cfg3k").max_length() == 1459)


def test_long_sentences_are_redrawn(monkeypatch):
    import playground.tasks.lano as lano

    monkeypatch.setattr(lano, "MAX_OVERFLOW", 1.0)
    task = task_from("task=cfg3f", "task.context=200")
    lengths = [len(task.example("train", i)) for i in range(60)]
    assert max(lengths) <= 200 and lengths == [len(task.example("train", i)) for i in range(60)]
    assert task.example("eval", 3).meta["length"] < 200


def dumped_windows(tmp_path, *overrides, count=300) -> list[dict]:
    """Training windows as ``playground-data dump windows=N`` writes them."""
    from playground.data.cli import main as data_main

    out = tmp_path / "windows.jsonl"
    data_main(["dump", "task=cfg3f", f"windows={count}", f"out={out}", *overrides])
    return [json.loads(line) for line in out.read_text().splitlines()]


def sentence_ends(windows: list[dict], bos: int, pad: int) -> dict[str, int]:
    """Sentence ends (a sentence's last symbol) by what follows them: ``trained`` (a ``<bos>``
    target), ``untrained`` (a ``<bos>`` that is not a target), ``padded``, ``edge`` (the window
    ends; the next one opens with ``<bos>`` at position 0, which nothing precedes)."""
    kinds = dict.fromkeys(("trained", "untrained", "padded", "edge"), 0)
    for k, w in enumerate(windows):
        ids, targets = w["ids"], w["targets"]
        for i in range(len(ids) - 1):
            if ids[i] not in (bos, pad) and ids[i + 1] in (bos, pad):
                kind = ("padded" if ids[i + 1] == pad else "trained" if targets[i + 1]
                        else "untrained")
                kinds[kind] += 1
        kinds["edge"] += (ids[-1] not in (bos, pad) and k + 1 < len(windows)
                          and windows[k + 1]["ids"][0] == bos)
    return kinds


def test_stream_windows_train_every_sentence_end(tmp_path):
    """cfg3f training windows (300, across a shard edge): under 1% padding; every sentence
    end inside a window is followed by a ``<bos>`` target, none by padding; only an end on a
    window edge (the next ``<bos>`` at position 0) goes untrained, and those are rare. Aligned
    windows, for contrast, train about a third of the ends (the module docstring)."""
    task = task_from("task=cfg3f")
    bos, pad = task.vocab.bos, task.vocab.pad
    windows = dumped_windows(tmp_path)
    ids = np.array([w["ids"] for w in windows])
    assert ids.shape == (300, 512) and (ids == pad).mean() < 0.01 and (ids[:252] != pad).all()
    assert (ids[252:] == pad).any()  # a shard edge lies inside the dump
    for w in windows:
        targets = np.array(w["targets"])
        row = np.array(w["ids"])
        assert targets[0] == 0 and (targets[1:] == (row[1:] != pad)).all()  # full LM loss
    ends = sentence_ends(windows, bos, pad)
    assert ends["untrained"] == ends["padded"] == 0 and ends["trained"] > 590
    assert ends["edge"] <= 0.01 * ends["trained"]
    aligned = sentence_ends(dumped_windows(tmp_path, "data.packing=aligned"), bos, pad)
    assert aligned["untrained"] == aligned["edge"] == 0
    assert aligned["trained"] < 0.5 * (aligned["trained"] + aligned["padded"])


# -- evaluation through models with known answers ----------------------------------------------


def small_grammar_task(tmp_path, *overrides):
    """Lano on a small random grammar (sentences of a few to ~20 tokens) from a JSON path."""
    g = random_grammar(4, depth=3, symbols_per_level=3, terminals=3, rules_per_symbol=(2, 3),
                       rule_length=(1, 3))
    path = tmp_path / "small.json"
    path.write_text(g.to_json())
    return task_from("task=cfg3f", f"task.grammar={path}", "task.context=64", *overrides), g


class TrueModel(nn.Module):
    """Logits = log of the exact next-symbol distribution of the text since the last <bos>
    (-inf elsewhere); with ``uniform=True``, equal logits for every token. Supports the cached
    decoding interface of ``playground.model.generate``."""

    def __init__(self, task, uniform: bool = False):
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros(1))
        self.task, self.uniform = task, uniform

    def new_cache(self, capacity: int | None = None) -> Cache:
        cache = Cache(capacity)
        cache.history = None  # type: ignore[attr-defined]
        return cache

    def next_logits(self, row: list[int]) -> torch.Tensor:
        v = len(self.task.vocab)
        if self.uniform:
            return torch.zeros(v)
        start = max(i for i, t in enumerate(row) if t == self.task.vocab.bos) + 1
        sentence = self.task.symbols(row[start:])
        out = torch.full((v,), -math.inf)
        probs = next_symbol_probs(self.task.grammar, sentence or [])[-1]
        with np.errstate(divide="ignore"):
            out[self.task.outcome_ids] = torch.tensor(np.log(probs), dtype=torch.float32)
        return out

    def forward(self, ids, cache=None, valid=None):
        rows = ids.tolist()
        if cache is not None:
            if cache.history is None:
                cache.history = [[] for _ in rows]
            for h, r in zip(cache.history, rows):
                h.extend(r)
            rows = cache.history
            return torch.stack([self.next_logits(r) for r in rows])[:, None]
        logits = torch.zeros(ids.shape[0], ids.shape[1], len(self.task.vocab))
        for b, r in enumerate(rows):
            for t in range(len(r)):
                if r[t] != self.task.vocab.pad:
                    logits[b, t] = self.next_logits(r[: t + 1])
        return logits


def test_true_distribution_scores_perfectly(tmp_path, one_thread):
    task, g = small_grammar_task(tmp_path, "task.gen_samples=100", "task.eval_size=8")
    m = task.evaluate(TrueModel(task), task.eval_examples(), batch_size=64)
    assert m["gen_acc"] == 1.0 and m["gen_stopped"] == 1.0
    assert abs(m["kl"]) < 1e-6 and abs(m["ent_model"] - m["ent_true"]) < 1e-6
    assert m["mass_outside"] < 1e-6
    pmf = g.length_pmf()
    mean, std = ((pmf * np.arange(len(pmf))).sum(),
                 math.sqrt((pmf * np.arange(len(pmf)) ** 2).sum()
                           - (pmf * np.arange(len(pmf))).sum() ** 2))
    assert abs(m["gen_len_mean"] - mean) < 5 * std / math.sqrt(100)


def test_uniform_model_kl_by_hand(tmp_path):
    task, g = small_grammar_task(tmp_path, "task.gen_samples=16", "task.eval_size=6",
                                 "task.gen_max_len=30")
    examples = task.eval_examples()
    m = task.evaluate(TrueModel(task, uniform=True), examples, batch_size=4)
    # by hand: p' = 1/4 on {end, 1, 2, 3}; q' = (q + 1e-5) / (1 + 4e-5)
    kls, ents = [], []
    for ex in examples:
        sentence = [int(p) for p in task.vocab.decode(ex.tokens[1:]).split()]
        for q in next_symbol_probs(g, sentence):
            qs = (q + 1e-5) / (1 + 4e-5)
            kls.append(sum(a * (math.log(b) - math.log(0.25)) for a, b in zip(q, qs)))
            ents.append(-sum(a * math.log(a) for a in q if a > 0))
    assert m["kl"] == pytest.approx(np.mean(kls), rel=1e-6)
    assert m["ent_true"] == pytest.approx(np.mean(ents), rel=1e-9)
    assert m["ent_model"] == pytest.approx(math.log(4), rel=1e-6)
    assert m["mass_outside"] == pytest.approx(3 / 7, rel=1e-6)
    assert m["gen_acc"] < 0.5 and 0 <= m["gen_len_min"] <= m["gen_len_max"] <= 30


def test_tiny_cpu_run_improves(make_cfg, tmp_path, one_thread):
    """30 steps on a small grammar (sentences of 6-9 tokens): the KL falls and generation
    accuracy rises between the evals at steps 10 and 30; every Lano metric is written; with
    ``train.save_samples`` the last eval's samples are in ``eval_samples.jsonl``, each verdict
    recomputed by nltk's chart parser and their share equal to ``gen_acc``."""
    g = random_grammar(4, depth=2, symbols_per_level=2, terminals=3, rules_per_symbol=(2, 3),
                       rule_length=(2, 3))
    (tmp_path / "g.json").write_text(g.to_json())
    run(make_cfg("task=cfg3f", f"task.grammar={tmp_path / 'g.json'}", "task.context=32",
                 "size=2L64D", "train.steps=30", "train.batch_size=8", "train.warmup_steps=4",
                 "train.lr=3e-3", "train.log_every=10", "train.eval_every=10", "task.eval_size=16",
                 "task.gen_samples=32", "train.save_samples=true"))
    evals = [r for r in runs.MetricsLog(tmp_path / "run" / "metrics.jsonl").records()
             if r["split"] == "eval"]
    assert [r["step"] for r in evals] == [10, 20, 30]
    for key in ("gen_acc", "gen_stopped", "gen_len_mean", "kl", "ent_true", "ent_model"):
        assert all(math.isfinite(r[key]) for r in evals)
    assert evals[-1]["kl"] < 0.7 * evals[0]["kl"] and evals[-1]["gen_acc"] > evals[0]["gen_acc"]
    samples = (tmp_path / "run" / "eval_samples.jsonl").read_text()
    rows = [json.loads(x) for x in samples.splitlines()]
    assert [r["sample"] for r in rows] == list(range(32)) and {r["step"] for r in rows} == {30}
    for r in rows:
        words = r["text"].split()
        assert len(words) == r["length"]
        ok = r["stopped"] and bool(words) and nltk_accepts_and_count(g, words, count=False)[0]
        assert r["accepted"] == ok, r
    assert sum(r["accepted"] for r in rows) / 32 == evals[-1]["gen_acc"]


@pytest.mark.slow
def test_cfg3f_cpu_run_improves(make_cfg, tmp_path, one_thread):
    """The tiny cfg3f run of docs/grammar.md: generation accuracy and KL improve (~5 min CPU)."""
    run(make_cfg("task=cfg3f", "size=2L64D", "train.steps=300", "train.batch_size=16",
                 "train.warmup_steps=20", "train.lr=3e-3", "train.eval_every=100",
                 "task.eval_size=64", "task.gen_samples=64"))
    evals = [r for r in runs.MetricsLog(tmp_path / "run" / "metrics.jsonl").records()
             if r["split"] == "eval"]
    assert evals[-1]["kl"] < evals[0]["kl"] and evals[-1]["gen_acc"] >= evals[0]["gen_acc"]

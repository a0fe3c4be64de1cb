"""Capo: people, biographies (re-parsed from their text by a parser that knows only the field
lists), the exposure-controlled stream, the tokenizer, and the capacity formula end to end."""

from __future__ import annotations

import collections
import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import task_from
from omegaconf import OmegaConf
from torch import nn

import playground
from playground.config import CONF_DIR, compose, to_objects
from playground.data.loader import Batches
from playground.data.packing import pack, shard_size
from playground.errors import ConfigError
from playground.model import build_model
from playground.tasks.capo_people import capacity_bits, capacity_upper, people
from playground.tasks.capo_templates import TEMPLATES, detokenize, template_problems, tokenize

DATA = Path(playground.__file__).parent / "tasks" / "data" / "capo_fields"
MONTHS = ("January February March April May June July August September October "
          "November December".split())
MALE, FEMALE = {"He", "he", "his", "him"}, {"She", "she", "her"}


def lines(name: str) -> list[str]:
    return [s.strip() for s in (DATA / f"{name}.txt").read_text(encoding="utf-8").splitlines()
            if s.strip()]


FIRST, MIDDLE, LAST = lines("first_name"), lines("middle_name"), lines("last_name")
CITIES, UNIS, MAJORS = lines("city"), lines("university"), lines("field")
COMPANY = dict(tuple(s.strip() for s in line.split(";")) for line in lines("company"))
VALUE_LISTS = {"city": set(CITIES) | set(COMPANY.values()), "university": set(UNIS),
               "major": set(MAJORS), "company": set(COMPANY)}


PATTERNS = [(v, re.compile(rf"(?<![\w'&+-]){re.escape(v)}(?![\w'&+-])"))
            for v in sorted(set().union(*VALUE_LISTS.values()))]


def find_values(text: str) -> list[str]:
    """Every field value in ``text``, keeping only matches not inside a longer match."""
    spans = [(m.start(), m.end(), v) for v, pat in PATTERNS
             if v in text for m in pat.finditer(text)]
    spans.sort(key=lambda s: s[0] - s[1])  # longest first
    kept: list[tuple[int, int, str]] = []
    for s in spans:
        if all(s[1] <= k[0] or s[0] >= k[1] for k in kept):
            kept.append(s)
    return [v for *_, v in sorted(kept)]


def parse_bio(text: str) -> dict[str, str]:
    """A biography's facts from its text alone (field lists and English, no task code)."""
    first, middle, last = text.split(" ")[:3]
    assert first in FIRST and middle in MIDDLE and last in LAST
    dates = re.findall(rf"\b({'|'.join(MONTHS)}) (\d{{1,2}}), (\d{{4}})\b", text)
    assert len(dates) == 1
    gendered = re.findall(r"\b(He|She|he|she|his|her|him)\b", text)
    assert gendered and (set(gendered) <= MALE or set(gendered) <= FEMALE)
    subjects = re.findall(r"(?:^|\. )(He|She) ", text)  # sentence starts after the first
    assert len(subjects) == 5, text
    values = find_values(text[len(f"{first} {middle} {last}"):])  # a last name can be a company
    (employer,) = [v for v in values if v in VALUE_LISTS["company"]]
    cities = [v for v in values if v in VALUE_LISTS["city"]]
    cities.remove(COMPANY[employer])
    (birth_city,) = cities
    (university,) = [v for v in values if v in VALUE_LISTS["university"]]
    (major,) = [v for v in values if v in VALUE_LISTS["major"]]
    assert len(values) == 5 and birth_city in CITIES
    month, day, year = dates[0]
    return {"name": f"{first} {middle} {last}", "birth_date": f"{month} {int(day)}, {year}",
            "birth_city": birth_city, "university": university, "major": major,
            "employer": employer,
            "work_city": COMPANY[employer], "pronoun": "he" if subjects[0] == "He" else "she"}


@pytest.fixture(scope="module")
def task():
    return task_from("task=capo_tiny", "task.N=300", "task.E=6", "task.eval_size=300")


def test_templates_obey_the_measurement_rules():
    assert template_problems() == []
    assert all(len(v) >= 20 for v in TEMPLATES.values())
    bad = {**TEMPLATES, "major": (*TEMPLATES["major"], "{S} was born in the city of {X}.")}
    assert any("continues differently" in p for p in template_problems(bad))
    assert any("must start with" in p
               for p in template_problems({**TEMPLATES, "major": ("{X} is {S}.",) * 20}))


def test_people_unique_deterministic_and_prefix_stable(task):
    pop = task.population()
    names = set(zip(pop["first"].tolist(), pop["middle"].tolist(), pop["last"].tolist()))
    assert len(names) == task.cfg.N
    big = people(0, np.arange(20_000), task.fields)
    assert (len(set(zip(big["first"].tolist(), big["middle"].tolist(), big["last"].tolist())))
            == 20_000)
    for k, col in pop.items():  # person i is the same in every population containing it
        assert (big[k][: task.cfg.N] == col).all()
    other = people(1, np.arange(20_000), task.fields)
    assert (other["first"] != big["first"]).mean() > 0.9
    sizes = {"month": 12, "day": 28, "year": 200, "city": 200, "university": 300, "major": 100,
             "company": 263, "pronoun": 2, "first": 400, "middle": 400, "last": 1000}
    for k, n in sizes.items():  # uniform: chi-square within 5 standard deviations of its mean
        counts = np.bincount(big[k], minlength=n)
        assert len(counts) == n
        chi2 = ((counts - 20_000 / n) ** 2 / (20_000 / n)).sum()
        assert chi2 < n + 5 * math.sqrt(2 * n), (k, chi2)


def test_deterministic_pure_functions(task):
    again = task_from("task=capo_tiny", "task.N=300", "task.E=6", "task.eval_size=300")
    for split, index in (("train", 0), ("train", 1234), ("eval", 7), ("test", 3)):
        a, b = task.example(split, index), again.example(split, index)
        assert a.tokens.tobytes() == b.tokens.tobytes() and a.meta == b.meta
    assert task.example("eval", 7).tokens.tobytes() != task.example("test", 7).tokens.tobytes()
    for i in (0, 17, 299):  # one person alone equals its row of the whole population
        assert ({k: int(v[0]) for k, v in people(0, np.array([i]), task.fields).items()}
                == task.person(i))
    shifted = task_from("task=capo_tiny", "task.N=300", "task.seed=1")
    assert shifted.facts(0) != task.facts(0)


@pytest.mark.parametrize("split", ["train", "eval"])
def test_biographies_state_exactly_the_persons_facts(task, split):
    for index in range(0, 1800, 7):
        ex = task.example(split, index)
        text = task.text(ex.tokens)
        facts = parse_bio(text)
        p = task.person(ex.meta["person"])
        assert facts["name"] == f"{FIRST[p['first']]} {MIDDLE[p['middle']]} {LAST[p['last']]}"
        assert facts["birth_date"] == f"{MONTHS[p['month']]} {p['day'] + 1}, {1900 + p['year']}"
        assert (facts["birth_city"] == CITIES[p["city"]]
                and facts["university"] == UNIS[p["university"]])
        assert (facts["major"] == MAJORS[p["major"]]
                and facts["employer"] == list(COMPANY)[p["company"]])
        assert facts["pronoun"] == ("he", "she")[p["pronoun"]] and facts == ex.meta["facts"]
        pieces = [task.vocab.pieces[t] for t in ex.tokens.tolist()]
        for key, (s, e) in ex.meta["spans"].items():  # the spans the eval scores hold the values
            assert detokenize(pieces[s:e]) == (facts[key].capitalize() if key == "pronoun"
                                               else facts[key])
        assert (text.startswith(facts["name"] + " ")
                and ex.loss_mask.tolist() == [False] + [True] * (len(ex) - 1))


def test_pronoun_is_the_first_gendered_word(task):
    for index in range(200):
        ex = task.example("train", index)
        pieces = [task.vocab.pieces[t] for t in ex.tokens.tolist()]
        first = next(i for i, w in enumerate(pieces) if w in MALE | FEMALE)
        assert ex.meta["spans"]["pronoun"] == [first, first + 1] and pieces[first - 1] == "."


def expected_sentence(template: str, facts: dict[str, str], first: bool) -> str:
    """A template filled in by plain string replacement (the renderer works on token ids)."""
    she = facts["pronoun"] == "she"
    forms = {"{S}": facts["name"] if first else ("She" if she else "He"),
             "{he}": "she" if she else "he",
             "{his}": "her" if she else "his", "{him}": "her" if she else "him"}
    for slot, word in forms.items():
        template = template.replace(slot, word)
    return template.replace("{X}", facts["kind"]).replace("..", ".")


def test_sentences_follow_their_templates_fresh_for_every_exposure(task):
    N, E = task.cfg.N, task.cfg.E
    texts, drawn, orders = (collections.defaultdict(set), collections.Counter(),
                            collections.Counter())
    for k in range(N * E):
        ex = task.example("train", k)
        text, facts = task.text(ex.tokens), ex.meta["facts"]
        sentences = re.split(r"(?<=\.) (?=(?:He|She) )", text)
        assert len(sentences) == 6
        for j, ((kind, t), sentence) in enumerate(zip(ex.meta["sentences"], sentences)):
            template = TEMPLATES[kind][t]
            assert sentence == expected_sentence(template, {**facts, "kind": facts[kind]}, j == 0)
            # no pronoun before sentence 2
            assert j > 0 or not re.search(r"\{h(e|is|im)\}", template)
            drawn[kind, t] += 1
        texts[ex.meta["person"]].add(text)
        orders[tuple(kind for kind, _ in ex.meta["sentences"])] += 1
    assert all(len(v) == E for v in texts.values())  # E distinct renderings of every person
    assert len(drawn) == sum(len(v) for v in TEMPLATES.values())  # every template is drawn
    assert len(orders) == 120 and all(o.index("work_city") == o.index("employer") + 1
                                      for o in orders)


def test_each_person_exactly_E_times_in_the_stream():
    task = task_from("task=capo_tiny", "task.N=40", "task.E=5")
    N, E = task.cfg.N, task.cfg.E
    metas = [task.example("train", k).meta for k in range(N * E)]
    assert collections.Counter(m["person"] for m in metas) == {i: E for i in range(N)}
    for e in range(E):  # pass e is a permutation of the people, all at exposure e
        assert sorted(m["person"] for m in metas[e * N : (e + 1) * N]) == list(range(N))
        assert {m["exposure"] for m in metas[e * N : (e + 1) * N]} == {e}
    # through the real loader: the windows' first N*E biographies name every person E times
    windows = next(Batches(task, 40, shard_examples=64))[0].numpy()
    bios = [b for w in windows for b in task.text(w).split("\n")][: N * E]
    assert len(bios) == N * E
    assert set(collections.Counter(" ".join(b.split(" ")[:3]) for b in bios).values()) == {E}


def test_train_steps_cover_exactly_the_stream():
    """train.steps=0: the steps that cover the N·E biographies exactly as the loader packs them."""
    import dataclasses

    from playground.config import Config, TrainConfig
    from playground.data.packing import count_windows
    from playground.run.train import resolve_steps

    task = task_from("task=capo_tiny", "task.N=30", "task.E=8")
    exs = [task.example("train", k) for k in range(240)]
    S = shard_size(task)  # how the loader cuts the stream before packing
    windows = sum(len(pack(exs[lo : lo + S], 512, 0)[0]) for lo in range(0, 240, S))
    assert task.train_examples() == 240 and count_windows(task, 240, S) == (windows, 240)
    for batch in (1, 3, 8):
        cfg = Config(task=task.cfg, train=TrainConfig(steps=0, batch_size=batch))
        steps = resolve_steps(dataclasses.replace(cfg), task).train.steps
        assert (steps - 1) * batch < windows <= steps * batch


def test_tokenizer_round_trips_every_biography_and_value(task):
    assert len(task.vocab) < 3000 and "<unk>" not in task.vocab.index
    for k in range(400):
        ex = task.example("train", k)
        text = task.text(ex.tokens)
        assert task.vocab.ids(tokenize(text)) == ex.tokens[1:].tolist()
        assert detokenize(tokenize(text)) == text
    for value in (*CITIES, *UNIS, *MAJORS, *COMPANY, *COMPANY.values(), *FIRST, *LAST):
        assert detokenize(tokenize(value)) == value and all(w in task.vocab.index
                                                            for w in tokenize(value))


def test_bits_formula():
    n0, log2_s0 = 400 * 400 * 1000, math.log2(2 * 12 * 28 * 200 * 200 * 300 * 100 * 263)
    assert log2_s0 == pytest.approx(47.59, abs=0.01)
    for N in (50, 1000):
        upper = N * math.log2(n0 / N) + N * log2_s0
        assert capacity_upper(N) == pytest.approx(upper)
        assert capacity_bits(math.log(N), 0.0, N) == pytest.approx(upper)
        assert capacity_bits(math.log(n0), log2_s0 * math.log(2), N) == pytest.approx(0, abs=1e-6)


class TableModel(nn.Module):
    """A stand-in LM: for each known biography, fixed next-token log-probabilities per position
    (``table[tokens] = logits[L, V]``)."""

    def __init__(self, table: dict, d_model: int = 4):
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros(1))
        self.table, self.cfg = table, type("Cfg", (), {"d_model": d_model, "tie_embeddings": True})

    def param_counts(self) -> dict[str, int]:
        return {"total": 1000, "embedding": 0, "canon": 0, "non_embedding": 1000}

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        V = next(iter(self.table.values())).shape[1]
        out = torch.zeros(*ids.shape, V)
        for r, row in enumerate(ids.tolist()):
            key = tuple(row[: len(row) - next((i for i, t in enumerate(reversed(row)) if t), 0)])
            out[r, : len(key)] = self.table[key]
        return out


def trie(candidates) -> tuple[dict, collections.Counter]:
    """Prefix -> Counter of next tokens, and how many candidates end at each prefix."""
    nxt: dict = collections.defaultdict(collections.Counter)
    ends: collections.Counter = collections.Counter()
    for c in candidates:
        ends[c] += 1
        for j in range(len(c)):
            nxt[c[:j]][c[j]] += 1
    return nxt, ends


def trie_rows(ex, span, candidates: tuple[dict, collections.Counter],
              V: int) -> dict[int, torch.Tensor]:
    """Log-probs that spread the mass uniformly over the candidates (token tuples, as a
    :func:`trie`), token by token along the example's value, then 'the value ends here'."""
    (s, e), (children, ends) = span, candidates
    value, rows = tuple(ex.tokens[s:e].tolist()), {}
    for j in range(s, e + 1):
        prefix = value[: j - s]
        nxt = collections.Counter(children.get(prefix, {}))
        if ends[prefix]:  # a shorter value ends here: its mass goes to the token that follows
            stop = int(ex.tokens[e]) if j == e else next(t for t in range(V) if t not in nxt)
            nxt[stop] += ends[prefix]  # the value (or a token that continues no value)
        logits = torch.full((V,), -1e4)
        total = sum(nxt.values())
        for t, c in nxt.items():
            logits[t] = math.log(c / total)
        rows[j - 1] = logits
    return rows


def oracle_model(task, examples, prior: bool) -> TableModel:
    """``prior=False``: knows every person (names uniform over the N people); ``prior=True``:
    knows only the field lists (every name part and value uniform over its list)."""
    V, table, v = len(task.vocab), {}, task.vocab
    ids = lambda xs: trie(tuple(v.ids(tokenize(x))) for x in xs)
    dates = trie(itertools.product(v.ids(MONTHS), v.ids(map(str, range(1, 29))), [v[","]],
                                   v.ids(map(str, range(1900, 2100)))))
    lists = {"birth_date": dates, "birth_city": ids(CITIES), "university": ids(UNIS),
             "major": ids(MAJORS), "employer": ids(COMPANY), "pronoun": ids(["He", "She"])}
    people = task.population()
    pop = ids(f"{FIRST[a]} {MIDDLE[b]} {LAST[c]}" for a, b, c in
              zip(people["first"], people["middle"], people["last"]))
    parts = [ids(part) for part in (FIRST, MIDDLE, LAST)]
    for ex in examples:
        rows: dict[int, torch.Tensor] = {}
        s, e = ex.meta["spans"]["name"]
        if prior:
            for j, part in zip(range(s, e), parts):
                rows.update(trie_rows(ex, (j, j + 1), part, V))
        else:
            rows.update(trie_rows(ex, (s, e), pop, V))
        for key, cands in lists.items():
            span = ex.meta["spans"][key]
            truth = trie([tuple(ex.tokens[span[0] : span[1]].tolist())])
            rows.update(trie_rows(ex, span, cands if prior else truth, V))
        logits = torch.zeros(len(ex), V)
        for j, row in rows.items():
            logits[j] = row
        table[tuple(ex.tokens.tolist())] = logits
    return TableModel(table)


@pytest.fixture(scope="module")
def small():
    task = task_from("task=capo_tiny", "task.N=40", "task.eval_size=40")
    return task, task.eval_examples()


@pytest.mark.parametrize("prior", [False, True])
def test_evaluate_gives_the_upper_bound_and_zero(small, prior):
    task, examples = small
    m = task.evaluate(oracle_model(task, examples, prior), examples, batch_size=16)
    N = task.cfg.N
    if prior:  # knows only the lists: p1 = ln N0, p2 = ln S0, so 0 bits
        assert m["p1"] == pytest.approx(math.log(400 * 400 * 1000), rel=1e-6)
        assert m["p2"] == pytest.approx(math.log(2 * 12 * 28 * 200 * 200 * 300 * 100 * 263),
                                        rel=1e-6)
        assert m["bits"] == pytest.approx(0, abs=1e-3 * N)
    else:  # knows everyone: p1 = ln N, p2 = 0, every first value token right
        assert (m["p1"] == pytest.approx(math.log(N), rel=1e-6)
                and m["p2"] == pytest.approx(0, abs=1e-6))
        assert m["bits"] == pytest.approx(capacity_upper(N), rel=1e-6) == m["bits_upper"]
        assert m["acc"] == 1.0
    assert m["params_used"] == 1000 + 4 * len(task.used_token_ids())


def test_evaluate_real_model_and_parameter_count(small):
    task, examples = small
    cfg = to_objects(compose(["task=capo_tiny", "size=capo/1-1", "canon=none"]))
    model = build_model(cfg.model, len(task.vocab), seed=0)
    m = task.evaluate(model, examples, batch_size=16)
    used = task.used_token_ids()
    # rows used: <bos>, template words, pronouns, and the tokens of the 40 people's values only
    assert (task.vocab.pad not in used and task.vocab.bos in used
            and len(used) < len(task.vocab) - 500)
    expected = (sum(p.numel() for n, p in model.named_parameters() if not n.startswith("embed."))
                + 64 * len(used))
    assert (m["params_used"] == expected
            and m["bits_per_param"] == pytest.approx(m["bits"] / expected))
    assert m["bits"] < 0 and m["acc"] < 0.2 and all(math.isfinite(v) for v in m.values())
    assert m["p2"] == pytest.approx(sum(m[f"p2_{k}"] for k in
                                        ("birth_date", "birth_city", "university", "major",
                                         "employer", "pronoun")))


def test_config_errors_and_size_presets():
    for bad in ("task.N=1", "task.E=0", "task.context=64", f"task.N={400 * 400 * 1000 + 1}"):
        with pytest.raises(ConfigError, match=bad.split("=")[0]):
            task_from("task=capo_tiny", bad)
    model = to_objects(compose(["task=capo", "size=capo/4-3"])).model  # the group path works
    assert ((model.size, model.n_layers, model.d_model, model.tie_embeddings)
            == ("capo/4-3", 4, 192, True))
    presets = sorted((CONF_DIR / "size" / "capo").glob("*.yaml"))
    assert len(presets) >= 10
    for path in presets:  # l-h: l layers, width 64h, head dim 64, tied embeddings
        layers, heads = map(int, path.stem.split("-"))
        text = path.read_text()
        assert text.startswith("# @package model\n")
        assert OmegaConf.create(text) == {"size": f"capo/{path.stem}", "n_layers": layers,
                                          "d_model": 64 * heads, "head_dim": 64,
                                          "tie_embeddings": True}

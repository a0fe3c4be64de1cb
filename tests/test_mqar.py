"""MQAR: targets recomputed from the pairs, fillers disjoint from keys and values, layouts."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from conftest import task_from


def parse(pieces: list[str], delimiter: bool):
    """(key, value, position of value) for each pair occurrence, and the filler count."""
    out, key, fillers = [], [], 0
    i = 1
    while i < len(pieces):
        p = pieces[i]
        if p.startswith("f"):
            assert not key, "a filler inside a key"
            fillers += 1
        elif p.startswith("k"):
            key.append(p)
            if not delimiter:
                out.append((tuple(key), pieces[i + 1], i + 1))
                key, i = [], i + 1
        elif p.startswith("<L"):
            assert int(p[2]) == len(key)
            out.append((tuple(key), pieces[i + 1], i + 1))
            key, i = [], i + 1
        else:
            raise AssertionError(f"unexpected {p} at {i}")
        i += 1
    return out, fillers


@pytest.mark.parametrize("preset", ["mqar", "mqar_standard", "mqar_tiny"])
@pytest.mark.parametrize("split", ["train", "eval"])
def test_targets_recomputed_from_pairs(preset, split):
    task = task_from(f"task={preset}")
    c = task.cfg
    for index in range(5):
        ex = task.example(split, index)
        pieces = task.vocab.decode(ex.tokens).split()
        occ, fillers = parse(pieces, c.delimiter)
        n = c.pairs[ex.meta["setting"]]
        assert len(occ) == 2 * n
        seen = collections.defaultdict(list)
        for key, value, pos in occ:
            seen[key].append((value, pos))
            assert c.min_key_len <= len(key) <= c.max_key_len
        assert all(len(v) == 2 and v[0][0] == v[1][0] for v in seen.values())
        assert {(" ".join(k), v[0][0]) for k, v in seen.items()} == {
            (p["key"], p["value"]) for p in ex.meta["pairs"]}
        second = sorted(v[1][1] for v in seen.values())
        assert np.flatnonzero(ex.loss_mask).tolist() == second
        assert all(max(v[0][1] for v in seen.values()) < s for s in second)  # all firsts come first
        length = c.lengths[ex.meta["setting"]]
        assert length == 0 or len(ex) == length
        if c.filler_gaps == "queries":
            first_half_end = max(v[0][1] for v in seen.values())
            assert not any(p.startswith("f") for p in pieces[: first_half_end + 1])


def test_fillers_disjoint_and_suffix_keys_occur():
    task = task_from("task=mqar")
    keys, values, fillers = set(), set(), set()
    suffix = 0
    for i in range(20):
        ex = task.example("train", i)
        for p in task.vocab.decode(ex.tokens).split():
            (keys if p.startswith("k") else values if p.startswith("val") else
             fillers if p.startswith("f") else set()).add(p)
        ks = [tuple(p["key"].split()) for p in ex.meta["pairs"]]
        suffix += sum(1 for a in ks for b in ks if a != b and a[-len(b):] == b)
    assert keys and values and fillers and not (keys & values or keys & fillers or values & fillers)
    assert suffix > 0


def test_mixed_settings_and_finite_training_set():
    task = task_from("task=mqar_tiny", "task.train_examples=7")
    settings = {task.example("train", i).meta["setting"] for i in range(40)}
    assert settings == {0, 1}
    assert task.example("train", 3).tokens.tobytes() == task.example("train", 10).tokens.tobytes()
    assert all(len(task.example("eval", i)) <= task.max_length() for i in range(50))

"""Shared fixtures: configs composed exactly as the CLI composes them, with CPU-test defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from omegaconf import OmegaConf

from playground.config import compose, to_objects

TEST_DEFAULTS = ["wandb.mode=disabled", "train.progress=false", "train.device=cpu"]


@pytest.fixture
def one_thread():
    """Tiny tensors and models: intra-op threads only add synchronisation, which costs dearly on
    a loaded 2-core machine, so such a test runs single-threaded."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def make_cfg(tmp_path):
    """make_cfg(*overrides, run="run") -> composed DictConfig writing into tmp_path/<run>."""

    def make(*overrides: str, run: str = "run"):
        return compose([*TEST_DEFAULTS, f"out_dir={tmp_path / run}", *overrides])

    return make


def task_from(*overrides: str):
    """A task object built from config overrides, e.g. task_from("task=depo1", "task.N=20")."""
    from playground.tasks import build_task

    return build_task(to_objects(compose(list(overrides))).task)


def assert_causal(model, vocab_size: int, length: int = 16, t: int = 9, seed: int = 0,
                  exact: bool = True):
    """Changing token t changes no logit before t (and does change some at t or after); returns
    the ids and their logits."""
    ids = torch.randint(0, vocab_size, (2, length), generator=torch.Generator().manual_seed(seed))
    changed = ids.clone()
    changed[:, t] = (ids[:, t] + 1) % vocab_size
    with torch.no_grad():
        a, b = model(ids), model(changed)
    if exact:
        assert torch.equal(a[:, :t], b[:, :t])
    else:  # e.g. MoE: tokens are batched per expert, so the GEMMs differ by rounding only
        torch.testing.assert_close(a[:, :t], b[:, :t], rtol=1e-5, atol=1e-6)
    assert not torch.allclose(a[:, t:], b[:, t:])
    return ids, a


def assert_cached_decoding_equals_full_forward(model, vocab_size: int) -> None:
    """A prompt, a second chunk, then one token at a time through the cache == one full forward."""
    ids = torch.randint(0, vocab_size, (3, 20), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full = model(ids)
        cache = model.new_cache()
        chunks = [model(ids[:, :7], cache), model(ids[:, 7:12], cache)]
        chunks += [model(ids[:, i : i + 1], cache) for i in range(12, 20)]
    torch.testing.assert_close(torch.cat(chunks, dim=1), full, rtol=1e-5, atol=1e-5)


# -- synthetic run records with known findings -----------------------------------------------


def _write_run(root: Path, variant: str, seed: int, acc: float, base: dict) -> None:
    """A finished run of the mqar_tiny task:
    config.yaml and summary.json as training writes them."""
    from playground.run.rundir import config_hash

    config = json.loads(json.dumps(base))
    config.update(seed=seed, variant=variant, run_name=f"{variant}_s{seed}")
    config["out_dir"] = str(root / "syn_cpu" / config["run_name"])
    d = Path(config["out_dir"])
    d.mkdir(parents=True)
    (d / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    summary = {"status": "finished", "config_hash": config_hash(config), "metrics": {"acc": acc},
               "primary": acc, "primary_metric": "acc"}
    (d / "summary.json").write_text(json.dumps(summary))
    # evaluations at steps 100 and 200 (seed 0 also at 300), reaching the final value
    evals = [(100, acc / 2), (200, acc)] + [(300, acc)] * (seed == 0)
    (d / "metrics.jsonl").write_text("".join(
        json.dumps({"split": "train", "step": t, "loss": 1.0}) + "\n"
        + json.dumps({"split": "eval", "step": t, "acc": v}) + "\n" for t, v in evals))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Finished runs of findings with known answers on mqar_tiny (its eval: 32 examples): (their
    folder, the findings file, the findings table indexed by id); tests/test_findings.py,
    tests/test_site_browser.py."""
    from playground.report import findings
    from playground.report.table import check_integrity, load_runs

    root = tmp_path_factory.mktemp("runs")
    base = OmegaConf.to_container(compose(["task=mqar_tiny", "size=2L64D", "task.eval_size=32",
                                           "sweep=syn_cpu", "panel=p"]), resolve=True)
    base.pop("hydra", None)
    values = {"base": [0.50, 0.52, 0.48], "good": [0.90, 0.85, 0.88], "bad": [0.10, 0.12, 0.11],
              "same": [0.51, 0.50, 0.49], "one": [0.90], "low": [0.02, 0.03, 0.01],
              "low2": [0.03, 0.02, 0.04]}
    for variant, accs in values.items():
        for seed, acc in enumerate(accs):
            _write_run(root, variant, seed, acc, base)
    spec = root / "findings.yaml"
    cell = {"panel": "p", "size": "2L64D"}
    entries = [{"id": f"F-{b}", "result": "1", "claim": f"{b} beats {a}", "sweep": "syn",
                "scale": "cpu", "a": a, "b": b, "seeds": [0, 1, 2], "cells": [cell]}
               for a, b in (("base", "good"), ("base", "bad"), ("base", "same"), ("base", "one"),
                            ("low", "low2"), ("base", "missing"))]
    spec.write_text(yaml.safe_dump({"findings": entries}))
    frame, refused = check_integrity(load_runs(root))
    assert not refused
    return root, spec, findings.evaluate(findings.load_findings(spec), frame).set_index("id")

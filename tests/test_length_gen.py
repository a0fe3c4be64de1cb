"""Length generalisation (``playground-eval RUN eval.length_scales=1,2,4``): every backbone ±
Canon reads inputs longer than its training context, each task's longer form is what its
docstring states, the CSV is written atomically, and bad input fails before any compute."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from conftest import task_from
from omegaconf import OmegaConf
from test_lano import TrueModel, small_grammar_task

from playground.config import compose, to_objects
from playground.errors import ConfigError
from playground.model import build_model
from playground.run import evaluate as ev
from playground.run import rundir as runs
from playground.run.train import run

TINY = ["task=mqar_tiny", "task.eval_size=16", "size=2L64D", "train.steps=1", "train.batch_size=4",
        "train.warmup_steps=0", "train.eval_every=0", "train.log_every=1"]
BACKBONES = {  # backbone -> (its overrides without Canon, with Canon-ABCD)
    "rope": (["mixer=rope", "canon=none"], ["mixer=rope", "canon=ABCD"]),
    "rope_quarter": (["mixer=rope_quarter", "canon=none"], ["mixer=rope_quarter", "canon=ABCD"]),
    "nope": (["mixer=nope", "canon=none"], ["mixer=nope", "canon=ABCD"]),
    "alibi": (["mixer=alibi", "canon=none"], ["mixer=alibi", "canon=ABCD"]),
    "hard_alibi": (["mixer=hard_alibi", "canon=none"], ["mixer=hard_alibi", "canon=ABCD"]),
    "gla": (["mixer=gla", "canon=none"], ["mixer=gla", "canon=ABCD"]),
    "mamba2": (["model=mamba2", "mixer=mamba2", "canon=none"],
               ["model=mamba2_mlp", "mixer=mamba2", "canon=ABCD"]),
    "gdn": (["mixer=gdn", "canon=none"], ["mixer=gdn_noconv", "canon=ABCD"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("canon", [False, True], ids=["plain", "canon"])
@pytest.mark.parametrize("backbone", sorted(BACKBONES))
def test_every_backbone_evaluates_beyond_its_training_context(backbone, canon, make_cfg, tmp_path,
                                                              one_thread):
    summary = run(make_cfg(*TINY, *BACKBONES[backbone][canon]))
    rows = ev.length_gen_run(tmp_path / "run", [1, 2, 4], device="cpu")
    table = pd.DataFrame(rows)
    assert sorted(table["scale"].unique()) == [1, 2, 4]
    assert dict(zip(table["scale"], table["context"])) == {1: 96, 2: 192, 4: 384}
    assert np.isfinite(table["value"]).all() and table["value"].between(0, 1).all()
    at_one = table[table["scale"] == 1].set_index("metric")["value"].to_dict()
    assert at_one == pytest.approx(summary["metrics"])  # scale 1 is the run's own eval


def test_cli_writes_length_gen_csv_atomically(make_cfg, tmp_path, monkeypatch, one_thread):
    run(make_cfg(*TINY, "mixer=rope", "canon=none"))
    written = []
    real = ev.atomic_write
    monkeypatch.setattr(ev, "atomic_write",
                        lambda path, data: (written.append(path), real(path, data)))
    ev.main([str(tmp_path / "run"), "eval.length_scales=[1,2]", "device=cpu", "eval_size=8"])
    out = tmp_path / "run" / "length_gen.csv"
    assert written == [out]
    table = pd.read_csv(out)
    assert list(table.columns) == ["scale", "context", "metric", "value"]
    assert sorted(table["scale"].unique()) == [1, 2] and "acc" in set(table["metric"])
    assert not list((tmp_path / "run").glob(".length_gen.csv.*"))  # no temporary left behind
    assert not (tmp_path / "run" / "eval.json").exists()


def test_training_writes_length_gen_at_the_end(make_cfg, tmp_path, one_thread):
    """train.length_scales: the run evaluates its final model at those scales itself (no
    checkpoint needed afterwards), the same rows playground-eval computes from the checkpoint;
    the key does not change the run's identity, so finished runs still match their sweep."""
    summary = run(make_cfg(*TINY, "mixer=rope", "canon=ABCD", "train.eval_batch_size=64",
                           "train.length_scales=[1,2]"))
    written = pd.read_csv(tmp_path / "run" / "length_gen.csv")
    again = pd.DataFrame(ev.length_gen_run(tmp_path / "run", [1, 2], device="cpu"))
    assert (list(written["scale"]) == list(again["scale"])
            and list(written["metric"]) == list(again["metric"]))
    assert written["value"].tolist() == pytest.approx(again["value"].tolist())
    plain = make_cfg(*TINY, "mixer=rope", "canon=ABCD")
    assert runs.config_hash(OmegaConf.to_container(plain, resolve=True)) == summary["config_hash"]


@pytest.mark.parametrize("scales, why", [("[1,2]", "no longer form"), ("[0]", "numbers > 0")])
def test_bad_training_scales_fail_before_any_compute(scales, why, make_cfg, tmp_path, one_thread):
    with pytest.raises(ConfigError, match="train.length_scales") as err:
        run(make_cfg(*TINY, "task=brevo_tiny", f"train.length_scales={scales}"))
    assert why in str(err.value)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("text", ["0", "-1", "1,0", "a", "", "[]", "nan"])
def test_bad_scales_name_the_key(text):
    with pytest.raises(ConfigError, match="eval.length_scales"):
        ev.parse_scales(text)


def test_scales_parse_both_spellings():
    assert ev.parse_scales("[1,2,4]") == ev.parse_scales("1, 2, 4") == [1.0, 2.0, 4.0]


def test_bad_scale_fails_before_the_model_is_loaded(make_cfg, tmp_path, monkeypatch, capsys,
                                                    one_thread):
    """mqar_tiny has 8 one- or two-token keys: 8 × its 6 pairs would need more keys than that
    allows; the error names the key and the task, and no model runs, no file is written."""
    run(make_cfg(*TINY, "mixer=rope", "canon=none"))

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded before every scale was checked")

    monkeypatch.setattr(ev, "_model", no_model)
    for scale, why in (("8", "task.pairs"), ("0", "numbers > 0")):
        with pytest.raises(SystemExit) as exit_:
            ev.main([str(tmp_path / "run"), f"eval.length_scales=1,{scale}", "device=cpu"])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert "eval.length_scales" in err and why in err
    assert not (tmp_path / "run" / "length_gen.csv").exists()


def test_lano_windows_hold_the_same_sentences_and_score_per_position(tmp_path, one_thread):
    """Lano at scale s: the eval sentences end to end in windows of at most s × context tokens;
    the exact distribution (since the last <bos>) still scores KL 0 at every position."""
    task, _ = small_grammar_task(tmp_path, "task.gen_samples=8", "task.eval_size=24")
    sentences = task.eval_examples()
    for scale in (1, 2, 4):
        longer = task.at_length(scale)
        windows = longer.eval_examples()
        assert longer.cfg.context == 64 * scale and max(map(len, windows)) <= 64 * scale
        assert np.array_equal(np.concatenate([w.tokens for w in windows]),
                              np.concatenate([e.tokens for e in sentences]))
        assert len(windows) < len(sentences) and sum(len(w.meta["lengths"]) for w in windows) == 24
        truth = np.concatenate([longer.truth(w) for w in windows])
        assert np.allclose(truth, np.concatenate([task.truth(e) for e in sentences]))
        m = longer.evaluate(TrueModel(longer), windows, batch_size=8)
        assert abs(m["kl"]) < 1e-6 and m["gen_acc"] == 1.0


@pytest.mark.parametrize("overrides", [["task=mano_tiny"], ["task=capo_tiny"], ["task=brevo_tiny"]])
def test_a_task_without_longer_form_names_itself(overrides):
    task = task_from(*overrides)
    with pytest.raises(ConfigError, match=f"eval.length_scales.*{task.cfg.preset}"):
        ev.longer_tasks(task, [1, 2])
    assert ev.longer_tasks(task, [1]) == [task]  # scale 1 is the task as trained


def test_depo_longer_doubles_n_and_context_and_its_answers_check():
    task = task_from("task=depo_tiny")
    longer = task.at_length(2)
    c, c2 = task.cfg, longer.cfg
    assert (c2.N, c2.context, c2.K, c2.seed) == (2 * c.N, 2 * c.context, c.K, c.seed)
    assert longer.vocab.pieces == task.vocab.pieces
    for i in range(8):
        ex = longer.example("eval", i)
        assert ex.meta["n"] == 2 * c.N and len(ex) <= longer.max_length() <= c2.context
        cycle = ex.meta["cycle"]
        for q in ex.meta["queries"]:  # the answer is the k-th successor along the cycle
            assert q["answer"] == cycle[(cycle.index(q["query"]) + q["k"]) % len(cycle)]
        for span in ex.meta["spans"]:  # and the supervised tokens are that answer
            assert (longer.vocab.decode(ex.tokens[span["start"]:span["end"]])
                    in {q["answer"] for q in ex.meta["queries"]})
    again = task.at_length(2).example("eval", 3)  # deterministic from the run's task seed
    assert np.array_equal(again.tokens, longer.example("eval", 3).tokens)


def test_mqar_longer_doubles_pairs_and_context_with_the_same_vocabulary():
    task = task_from("task=mqar_tiny")
    longer = task.at_length(2)
    assert (longer.cfg.pairs == [2 * n for n in task.cfg.pairs]
            and longer.cfg.context == 2 * task.cfg.context)
    assert longer.vocab.pieces == task.vocab.pieces
    ex = longer.example("eval", 0)
    assert (len(ex.meta["pairs"]) == 2 * task.cfg.pairs[-1]
            and len(ex) <= longer.max_length() <= longer.cfg.context)
    values = {p["key"]: p["value"] for p in ex.meta["pairs"]}
    assert all(longer.vocab.pieces[ex.tokens[s["start"]]] in values.values()
               for s in ex.meta["spans"])


def test_brevo_word_names_grow_and_generate_at_the_longer_context(one_thread):
    """Brevo's metric is generative (cached decoding); the longer form runs through it."""
    task = task_from("task=brevo_tiny", "task.names=word", "task.context=512")
    longer = task.at_length(2)
    assert longer.cfg.N == 2 * task.cfg.N and longer.vocab.pieces == task.vocab.pieces
    model = build_model(to_objects(compose(["size=2L64D"])).model, len(task.vocab))
    examples = [longer.example("eval", i) for i in range(4)]
    assert max(len(e) for e in examples) > task.max_length() // 2
    metrics = longer.evaluate(model, examples, batch_size=4)
    assert 0 <= metrics["acc"] <= 1


@pytest.mark.slow
def test_report_draws_metric_versus_scale(make_cfg, tmp_path, one_thread):
    from playground.report.cli import main as report

    for name, overrides in (("plain", ["canon=none"]), ("canon", ["canon=ABCD"])):
        run(make_cfg(*TINY, "mixer=rope", *overrides, run=f"results/{name}"))
        ev.main([str(tmp_path / "results" / name), "eval.length_scales=1,2", "device=cpu",
                 "eval_size=8"])
    report(["lengthgen", str(tmp_path / "results")])
    out = tmp_path / "results" / "report"
    table = pd.read_csv(out / "lengthgen.csv")
    assert len(table) == 4 and sorted(table["scale"].unique()) == [1, 2]
    assert table["variant"].nunique() == 2 and set(table["metric"]) == {"acc"}
    assert (len(list(out.glob("lengthgen_*.png"))) == 1
            and len(list(out.glob("lengthgen_*.svg"))) == 1)


def test_scaled_config_is_a_copy():
    task = task_from("task=depo_tiny")
    assert dataclasses.asdict(task.at_length(2).cfg)["N"] == 2 * task.cfg.N and task.cfg.N == 16


def test_committed_mini_length_gen_agrees_with_its_runs():
    """results/mini/length_gen: every point of the committed table is the mean and standard
    deviation over the two seeds of the runs' own length_gen.csv, recomputed here from the run
    directories' names and files alone (not through the report's code)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "results" / "mini"
    labels = {"rope": "Llama(RoPE)", "rope0.25": "Llama(RoPE¼)", "nope": "Llama(NoPE)",
              "alibi": "Llama(ALiBi)"}
    primary = {"mqar": "acc", "depo1": "acc_at_K"}
    points = {}
    runs_ = sorted(p for p in (root / "runs" / "length_gen_mini").iterdir() if p.is_dir())
    assert len(runs_) == 32
    for run_dir in runs_:
        task, *_, position, canon, _lr, seed = run_dir.name.split("_")
        assert '"status": "finished"' in (run_dir / "summary.json").read_text()
        variant = labels[position] + ("" if canon == "canon-none" else " + Canon-ABCD(res)")
        rows = pd.read_csv(run_dir / "length_gen.csv")
        for r in rows[rows["metric"] == primary[task]].itertuples():
            points.setdefault((variant, r.scale, r.context), []).append(r.value)
    table = pd.read_csv(root / "length_gen" / "lengthgen.csv")
    assert len(table) == len(points) == 48
    for r in table.itertuples():
        values = points[(r.variant, r.scale, r.context)]
        assert r.seeds == len(values) == 2
        assert (r.value == pytest.approx(np.mean(values))
                and r.spread == pytest.approx(np.std(values, ddof=1)))

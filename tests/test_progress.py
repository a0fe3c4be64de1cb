"""Long work shows itself: the banner and ETA of a run, progress lines off a terminal, the
progress of an evaluation's generation, a local sweep's ``run k/N`` lines, and the warning for a
run too big for a CPU (docs/runs.md, "What a run prints")."""

from __future__ import annotations

import io
import json
import math
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from playground.config import TrainConfig, compose, to_objects
from playground.model import build_model, generate, generation_progress
from playground.run import budget
from playground.run.budget import check_cost, cost, duration_text, parameter_count
from playground.run.loop import Trainer, evals_left
from playground.run.runlog import EvalProgress, RunLog, count_text
from playground.sweep import launch

TINY = ["wandb.mode=disabled", "train.device=cpu", "task.N=8", "task.V=8", "task.context=96",
        "task.eval_size=16", "size=2L64D", "train.batch_size=8", "train.warmup_steps=2",
        "train.log_every=2", "train.eval_every=4", "train.ckpt_every=3", "train.steps=6"]


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    """A tiny run with progress on and standard output a pipe (not a terminal): its output
    and its run directory."""
    out = tmp_path_factory.mktemp("run") / "run"
    proc = subprocess.run([sys.executable, "-m", "playground.run.train", *TINY,
                           "train.progress=true", f"out_dir={out}"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, out


def test_the_banner_comes_first_with_every_field_and_lands_in_train_log(printed):
    stdout, out = printed
    lines = stdout.splitlines()
    assert lines[0] == f"run {out}"
    head = "\n".join(lines[:6])
    for field in ("task depo (depo_tiny: N=8 K=2), context 96", "model 2L64D rope canon ABCD",
                  "parameters without the embeddings", "in all", "device cpu (world size 1)",
                  "fp32", "no compile", "6 steps × 8 × 96 tokens = 4.61k tokens",
                  "checkpoints of 1.38 MB each"):
        assert field in head, field
    counts = re.search(r"([\d,]+) parameters without the embeddings, ([\d,]+) in all", head)
    summary = json.loads((out / "summary.json").read_text())
    assert [int(g.replace(",", "")) for g in counts.groups()] == [
        summary["params"]["non_embedding"], summary["params"]["total"]]
    eta = r"  ETA \S+: 4 steps to go at \S+ s a step \(measured over 2 steps.*\)"
    assert re.fullmatch(eta, lines[5])
    assert lines.index(lines[5]) < next(i for i, x in enumerate(lines) if x.startswith("step 2/6"))
    assert (out / "train.log").read_text().startswith(head)


def test_progress_lines_off_a_terminal_carry_elapsed_and_eta(printed):
    stdout, out = printed
    steps = [line for line in stdout.splitlines() if line.startswith("step ")]
    assert len(steps) == 3
    for line in steps:
        pattern = r"step \d/6 loss \S+ lr \S+ tok/s \S+ elapsed \d\S*s eta \d\S*s"
        assert re.fullmatch(pattern, line), line
    assert re.search(r"^\[eval step 4\] acc=.* \(\d\S*s\)$", stdout, re.M)
    log = (out / "train.log").read_text()
    assert all(line in log for line in steps)


def test_duration_and_count_texts():
    assert [duration_text(s) for s in (0, 0.44, 9.96, 59.4, 61, 3599, 3600, 86399, 90000)] == [
        "0.0s", "0.4s", "10s", "59s", "1m01s", "59m59s", "1h00m", "23h59m", "1d01h"]
    assert [count_text(n) for n in (950, 12_345, 2_457_600, 1.5e9)] == [
        "950", "12.3k", "2.46M", "1.5G"]


@pytest.mark.parametrize("steps, every, step, left", [
    (300, 100, 1, 3), (300, 100, 100, 3), (300, 100, 101, 2), (300, 100, 300, 1),
    (250, 100, 1, 3), (250, 100, 201, 1), (300, 0, 5, 1), (300, 100, 301, 0)])
def test_evals_left_counts_the_periodic_evaluations_and_the_last(steps, every, step, left):
    t = TrainConfig(steps=steps, eval_every=every)
    assert evals_left(step, t) == left
    if every:  # the same count, by brute force
        assert left == sum(1 for s in range(step, steps + 1) if s % every == 0 or s == steps)


def test_eta_is_the_steps_to_go_at_the_measured_rate_plus_the_evaluations_to_go():
    t = TrainConfig(steps=100, eval_every=50)
    state = SimpleNamespace(cfg=SimpleNamespace(train=t), step=10, train_time=25.0,
                            _since=[(0, 5.0)], eval_s=[])
    assert Trainer.eta_s(state) == pytest.approx(90 * 2.0)  # 20 s over the first 10 steps
    state._since.append((10, 25.0))  # the first log line; later ones measure from it
    state.step, state.train_time, state.eval_s = 20, 30.0, [3.0, 5.0]
    assert Trainer.eta_s(state) == pytest.approx(80 * 0.5 + 2 * 4.0)  # evals at 50 and 100
    state.step, state.train_time = 10, 25.0  # no step since the first log line: from the start
    assert Trainer.eta_s(state) == pytest.approx(90 * 2.0 + 2 * 4.0)


def test_generation_progress_sees_every_decoding_step_and_changes_nothing(one_thread):
    cfg = to_objects(compose(["size=2L64D", "train.device=cpu"]))
    model = build_model(cfg.model, 12, seed=1)
    prompts = [[1, 2, 3][: 1 + i % 3] for i in range(10)]
    plain = generate(model, prompts, max_new=9, stop=[5], batch_size=4)
    calls = []

    def progress(total):
        calls.append(("start", total))
        return calls.append

    with generation_progress(progress):
        shown = generate(model, prompts, max_new=9, stop=[5], batch_size=4)
    same = [(g.tokens.tolist(), g.stopped) for g in plain]
    assert [(g.tokens.tolist(), g.stopped) for g in shown] == same
    assert calls[0] == ("start", 3 * 9) and calls[-1] == 27
    done = calls[1:]
    assert done == sorted(done) and set(range(9, 28, 9)) <= set(done)
    calls.clear()
    generate(model, prompts, max_new=9, batch_size=4)  # outside the context: nobody is told
    assert calls == []


def test_eval_progress_off_a_terminal_prints_a_line_per_tenth_after_the_quiet_time(capsys):
    now = [0.0]
    tick = EvalProgress("eval step 7", quiet_s=5.0, clock=lambda: now[0])(200)
    for done in range(1, 201):
        now[0] = done * 0.1  # 0.1 s a step: quiet until step 50
        tick(done)
    lines = capsys.readouterr().out.splitlines()
    assert [re.search(r"(\d+)%", x).group(1) for x in lines] == [
        "25", *map(str, range(30, 101, 10))]
    assert lines[0] == ("[eval step 7] generating: 25% (50/200 decoding steps), elapsed 5.0s, "
                        "eta 15s")
    assert lines[-1].endswith("elapsed 20s, eta 0.0s")


def test_eval_progress_on_a_terminal_draws_a_bar(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    tick = EvalProgress("eval step 3", quiet_s=0.0)(40)
    for done in range(1, 41):
        tick(done)
    drawn = screen.getvalue()
    assert drawn.startswith("\reval step 3 generating:   0%|") and "| 0/40 [" in drawn
    assert "[eval step 3]" not in drawn and drawn.endswith("\r")  # a bar, not lines; cleared


def test_a_run_too_big_for_a_cpu_is_warned_of_with_its_estimate():
    cfg = to_objects(compose(["size=12L768D", "train.device=cpu", "train.steps=300"]))
    vocab = 40
    c = cost(cfg, parameter_count(cfg, vocab), torch.device("cpu"))
    assert (c.checkpoint == c.params * 12 > 1e9
            and c.tokens == cfg.train.batch_size * cfg.task.context)
    assert c.step_s == pytest.approx(6 * c.params * c.tokens / 5e10)
    assert c.run_s == pytest.approx(300 * c.step_s) and c.run_s > 3600
    warning = check_cost(cfg, vocab)
    assert warning.startswith("warning: this run is large for a CPU: size=12L768D")
    assert "300 steps" in warning and "1.02 GB each (2 kept)" in warning
    gpu = cost(cfg, c.params, torch.device("cuda"))
    assert gpu.step_s == pytest.approx(c.step_s * 5e10 / 1e14)
    small = to_objects(compose(["size=2L128D", "train.device=cpu"]))  # the embedded default
    assert check_cost(small, 40) is None
    long = to_objects(compose(["size=2L64D", "train.device=cpu", "train.steps=100000"]))
    assert "large for a CPU" in check_cost(long, 40)  # long, not big: time alone warns


def test_the_warning_comes_before_training_and_progress_off_keeps_only_the_banner(
        make_cfg, tmp_path, monkeypatch, capsys):
    """In process, as a Hydra job runs it (conftest: ``train.progress=false``)."""
    from playground.run.train import run

    monkeypatch.setattr(budget, "LONG_RUN_S", 1e-6)  # any run is "long"
    with RunLog() as log:
        run(make_cfg(*TINY[2:], "train.steps=2", "train.eval_every=0"), log)
    printed = capsys.readouterr()
    assert printed.err.startswith("warning: this run is large for a CPU: size=2L64D")
    log = (tmp_path / "run" / "train.log").read_text()  # make_cfg's run directory
    assert log.startswith("warning: this run is large for a CPU") and "\nrun " in log
    assert printed.out.startswith(f"run {tmp_path / 'run'}\n")
    assert not re.search(r"^step \d", printed.out, re.M)  # no progress lines


def test_a_local_sweep_says_k_of_n_with_an_eta(tmp_path, monkeypatch, capsys):
    """Each run's process replaced by a quick one: 3 runs, 2 at a time."""
    real = subprocess.Popen

    def quick(command, **kwargs):
        assert command[1:3] == ["-m", "playground.run.train"]
        return real([sys.executable, "-c", "import time; time.sleep(0.3)"], **kwargs)

    monkeypatch.setattr(launch.subprocess, "Popen", quick)
    runs = [["size=2L64D", "train.device=cpu", f"seed={s}", f"out_dir={tmp_path}/s{s}"]
            for s in range(3)]
    assert launch.run_local(runs, 0, tmp_path / "logs", per_gpu=2) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("launching 3 run(s), 2 at a time")
    ends = [line for line in out if line.startswith("run ")]
    assert [line.split()[1] for line in ends] == ["1/3:", "2/3:", "3/3:"]
    for line in ends:
        assert re.match(r"run \d/3: s\d exit 0 after \d\S*s \(log .*\.1\.log\); ", line), line
    assert re.search(r"elapsed, ETA \d\S*s \(2 run\(s\) left\)$", ends[0])
    assert re.search(r"all 3 run\(s\) ended, \S+ in all$", ends[-1])


def test_sweep_eta_is_the_mean_duration_times_the_runs_left_over_the_slots():
    assert (launch.progress_text([60.0, 120.0], 8, 2, 150.0)  # 90 s × 6 left ÷ 2 at a time
            == "2m30s elapsed, ETA 4m30s (6 run(s) left)")
    assert launch.progress_text([60.0], 2, 4, 60.0) == "1m00s elapsed, ETA 1m00s (1 run(s) left)"
    assert launch.progress_text([1.0, 2.0], 2, 1, 3.0) == "all 2 run(s) ended, 3.0s in all"


def test_a_local_sweep_with_a_deadline_starts_only_the_runs_that_end_in_time(
        tmp_path, monkeypatch, capsys):
    """Quick processes; the expected times are given: seed s takes 10 × (s + 1) s alone and
    twice that with two on its GPU, against a 25 s deadline."""
    real = subprocess.Popen
    monkeypatch.setattr(launch.subprocess, "Popen", lambda command, **kw: real(
        [sys.executable, "-c", "import time; time.sleep(0.3)"], **kw))
    asked = []

    def wall(config, sharing):
        asked.append((config.seed, sharing))
        return 10.0 * (config.seed + 1) * sharing

    runs = [["size=2L64D", "train.device=cpu", f"seed={s}", f"out_dir={tmp_path}/s{s}"]
            for s in range(4)]
    assert launch.run_local(runs, 1, tmp_path / "logs", per_gpu=2, deadline=25.0,
                            wall=wall) == 0
    out = capsys.readouterr().out
    assert "a run starts only if expected to end within deadline=25 s" in out
    started = re.findall(r"^run \d/4: (s\d) exit 0", out, re.M)
    assert sorted(started) == ["s0", "s1"]  # 10 s and 20 s alone; seeds 2, 3: 30 s and 40 s
    assert "2 run(s) not started: each would end after deadline=25 s" in out
    assert out.rstrip().endswith("s2, s3")  # in the queue's order
    assert (1, 2) in asked  # seed 1 was first held against a GPU shared with seed 0: 40 s


def test_a_local_launch_skips_finished_runs_before_the_deadline_sees_them(
        tmp_path, monkeypatch, capsys):
    """Seed 0's directory holds its finished run (same config): it is neither started nor held
    against the deadline, which leaves room for seed 1 (20 s alone, 25 s deadline); seed 2's
    directory holds a finished run of another config: not launched, with the run's own error."""
    from omegaconf import OmegaConf

    real, started = subprocess.Popen, []

    def quick(command, **kw):
        started.append(next(a for a in command if a.startswith("seed=")))
        return real([sys.executable, "-c", "import time; time.sleep(0.3)"], **kw)

    monkeypatch.setattr(launch.subprocess, "Popen", quick)
    runs = [["size=2L64D", "train.device=cpu", f"seed={s}", f"out_dir={tmp_path}/s{s}"]
            for s in range(3)]
    for seed, stored in ((0, runs[0]), (2, [*runs[2][:2], "seed=7", runs[2][3]])):
        config = launch.plan([stored])[0].config
        (tmp_path / f"s{seed}").mkdir()
        OmegaConf.save(config, tmp_path / f"s{seed}" / "config.yaml", resolve=True)
        (tmp_path / f"s{seed}" / "summary.json").write_text('{"status": "finished"}')
    assert launch.run_local(runs, 1, tmp_path / "logs", per_gpu=1, deadline=25.0,
                            wall=lambda config, sharing: 20.0 * sharing) == 1
    printed = capsys.readouterr()
    assert started == ["seed=1"]
    assert "1 of 3 run(s) finished already" in printed.out
    assert "launching 1 run(s)" in printed.out and "not started" not in printed.out
    assert re.search(r"run 2 \(\): not launched: .*s2 already holds a run with a different config "
                     r"\(seed: 7 -> 2\)", printed.err), printed.err
    from playground.sweep.cli import dry_run  # the dry run marks them alike

    dry_run(None, runs, "local")
    marks = [line.split(" playground-train")[0].strip() for line in
             capsys.readouterr().out.splitlines() if " playground-train " in line]
    assert [m.split(" (")[0] for m in marks] == ["done", "todo", "not launchable"], marks
    dry_run(None, runs, "local")
    assert "1 of 3 runs to do (1 finished, 1 not launchable)" in capsys.readouterr().out


@pytest.mark.parametrize("how", ["launcher=local", "launcher=basic", "dry_run=true"])
def test_an_override_no_run_can_take_is_refused_before_anything(tmp_path, capsys, how):
    """An override of the command line that no run of the sweep can take (a misspelt key, a size
    no option has, a value the run's own checks refuse, a key no schema has) is one error naming
    it, before anything is launched or written, not one 'not launched' line per run: with the
    local launcher, Hydra's and a dry run alike."""
    from playground.sweep.cli import main

    for bad, named in (("sizes=2L64D", "'sizes'"), ("size=2L65D", "size=2L65D"),
                       ("train.lr=-1", "train.lr=-1.0 is invalid"),
                       ("+train.stepz=3", "train.stepz is not a config key")):
        with pytest.raises(SystemExit) as stop:
            main(["mqar", "scale=cpu", bad, how, f"root={tmp_path}/r"])
        err = capsys.readouterr().err
        assert stop.value.code != 0 and "none of the" in err and named in err, err
        assert "not launched" not in err and not (tmp_path / "r").exists()


def test_a_run_of_a_launchs_tail_gets_the_cores_of_the_runs_that_have_ended(
        tmp_path, monkeypatch):
    """``PLAYGROUND_HOST_RUNS`` (the runs whose loader workers share the host's cores) is the
    runs that may run from a run's start on, not the launch's slots: seed 2 is expected in time
    only alone on the GPU (beside seed 1, which has most of its expected 40 s left whenever seed
    0 ends, it would end past the deadline), so it starts once seeds 0 and 1 have ended, and
    counts itself alone."""
    from playground.run.device import HOST_RUNS

    real, hosts = subprocess.Popen, {}

    def quick(command, env, **kw):
        hosts[next(a for a in command if a.startswith("seed="))] = env[HOST_RUNS]
        return real([sys.executable, "-c", "import time; time.sleep(0.3)"], env=env, **kw)

    monkeypatch.setattr(launch.subprocess, "Popen", quick)
    runs = [["size=2L64D", "train.device=cpu", f"seed={s}", f"out_dir={tmp_path}/s{s}"]
            for s in range(3)]

    def wall(config, sharing):
        return 40.0 if config.seed < 2 else 30.0 if sharing == 1 else 99.0

    assert launch.run_local(runs, 1, tmp_path / "logs", per_gpu=2, deadline=50.0, wall=wall) == 0
    assert hosts == {"seed=0": "2", "seed=1": "2", "seed=2": "1"}


def test_a_deadline_sweep_learns_from_its_finished_runs(tmp_path, monkeypatch, capsys):
    """The same sweep, where finished runs count whatever their length: the first run takes a
    fraction of its estimate, so the rest of its kind are expected to take that fraction (× the
    calibrated margin) and all four start; the sweep says by how much it rescaled."""
    real = subprocess.Popen
    monkeypatch.setattr(launch.subprocess, "Popen", lambda command, **kw: real(
        [sys.executable, "-c", "import time; time.sleep(0.3)"], **kw))
    monkeypatch.setattr(launch, "CALIBRATE_AFTER_S", 0.0)
    runs = [["size=2L64D", "train.device=cpu", f"seed={s}", f"out_dir={tmp_path}/s{s}"]
            for s in range(4)]
    assert launch.run_local(runs, 1, tmp_path / "logs", per_gpu=2, deadline=25.0,
                            wall=lambda config, sharing: 10.0 * (config.seed + 1) * sharing) == 0
    out = capsys.readouterr().out
    assert sorted(re.findall(r"^run \d/4: (s\d) exit 0", out, re.M)) == ["s0", "s1", "s2", "s3"]
    ratio = re.search(r"^deadline: attention/depo runs take up to ×([\d.]+) of their estimate; "
                      r"the next are expected to take their estimate × ([\d.]+)$", out, re.M)
    assert ratio and 0 < float(ratio[1]) < 1, out  # 0.3 s and more of an estimated 10 / 1.5 s
    assert float(ratio[2]) == pytest.approx(float(ratio[1]) * launch.CALIBRATED_MARGIN, abs=0.01)
    assert "not started" not in out


def test_a_run_joined_on_its_gpu_is_calibrated_against_its_estimate_shared():
    """Run a starts alone (100 s estimated alone, 200 s with two on the GPU); b joins it at
    10 s, and a ends at 210 s: by its estimates a tenth of it ran alone and the rest shared, so
    its measured / estimated ratio is 0.1 + 200 / 200 = 1.1 (210 s over its alone estimate:
    2.1)."""
    from types import SimpleNamespace

    slots = launch.Slots(["0"], 2, deadline=100.0, wall=lambda config, k: 100.0 * k * 1.5,
                         say=lambda _: None, margin=1.5)
    a, b = SimpleNamespace(config=None), SimpleNamespace(config=None)
    slots.take("0", a, 0.0)
    slots.take("0", b, 10.0)
    ratio_a, ratio_b = slots.give("0", a, 210.0), slots.give("0", b, 210.0)
    assert ratio_a == pytest.approx(1.1) and ratio_b == pytest.approx(1.0)
    slots.calibrate(a, ratio_a, 210.0)
    assert slots.ratios == {("", ""): pytest.approx(1.1)}


def test_the_simulated_launch_follows_the_deadline_rule(tmp_path, monkeypatch):
    """``launch.simulate``: each run takes its estimate (the wall time less the margin). Seed 0
    (10 s with the margin, 6.7 s estimated) ends at 6.7 s; seed 1 alone (20 s) no longer fits
    in the 18.3 s left, unless finished runs rescale their kind: then 13.3 × 1.15 s does, and
    seed 1 runs from 6.7 to 20 s."""
    runs = launch.plan([["size=2L64D", "train.device=cpu", f"seed={s}", f"out_dir={tmp_path}/s{s}"]
                        for s in range(4)])

    def wall(config, sharing):
        return 10.0 * (config.seed + 1) * sharing

    started, left = launch.simulate(runs, 1, 2, 25.0, wall)
    assert [(r.config.seed, a, round(b, 2)) for r, a, b in started] == [(0, 0.0, 6.67)]
    assert [r.config.seed for r in left] == [1, 2, 3]
    monkeypatch.setattr(launch, "CALIBRATE_AFTER_S", 0.0)
    started, left = launch.simulate(runs, 1, 2, 25.0, wall)
    assert [(r.config.seed, round(a, 2), round(b, 2)) for r, a, b in started] == [
        (0, 0.0, 6.67), (1, 6.67, 20.0)]
    assert [r.config.seed for r in left] == [2, 3]


def test_the_simulated_launch_slows_a_run_for_the_runs_that_join_its_gpu(tmp_path):
    """Two runs start at once on one GPU: seed 0 takes 10 s alone and 20 s shared by two, seed
    1 4 s and 8 s. Shared, seed 1 ends at 8 s, when seed 0 has done 8 / 20 of itself; alone it
    does the other 0.6 in 6 s and ends at 14 s, not at its 10 s alone although it started
    first and alone."""
    runs = launch.plan([["size=2L64D", "train.device=cpu", f"seed={s}", f"out_dir={tmp_path}/s{s}"]
                        for s in range(2)])

    def wall(config, sharing):
        return (10.0 if config.seed == 0 else 4.0) * sharing

    started, left = launch.simulate(runs, 1, 2, 100.0, wall, margin=1.0)
    assert [(r.config.seed, a, round(b, 6)) for r, a, b in started] == [(0, 0.0, 14.0),
                                                                          (1, 0.0, 8.0)]
    assert not left


def test_a_lower_margin_packs_more_runs_into_the_deadline(tmp_path):
    """The default wall is the estimate × the runs sharing × ``margin``: seeds 0-3 each 10 GPU-s
    (``cost.estimate`` stubbed), so 10 s alone, 20 s shared by two. On one GPU, two at a time,
    against a 40 s deadline: seeds 0 and 1 end at 20 s; seed 3 would start then beside seed 2,
    which shared by two is expected there 20 × 1.5 = 30 s, too late at ×1.5, just in time at
    ×1.0."""
    from unittest import mock

    runs = launch.plan([["size=2L64D", "train.device=cpu", f"seed={s}", f"out_dir={tmp_path}/s{s}"]
                        for s in range(4)])
    with mock.patch("playground.sweep.cost.estimate",
                    lambda config, sharing: SimpleNamespace(gpu_s=10.0)):
        counts = {m: len(launch.simulate(runs, 1, 2, 40.0, margin=m)[0]) for m in (1.5, 1.0)}
    assert counts == {1.5: 3, 1.0: 4}


def test_whole_cells_take_the_groups_whose_runs_all_end_in_time(tmp_path):
    """Groups in order of importance, one GPU, one run at a time, each run its wall time (×1.0):
    A (5 + 5 s) fits the 25 s deadline; B (10 + 10 s more) would not, and is passed over; C
    (5 s) fits after A; D only needs a run of A's, already taken."""
    runs = launch.plan([["size=2L64D", "train.device=cpu", f"seed={s}", f"out_dir={tmp_path}/s{s}"]
                        for s in range(5)])
    seconds = [5.0, 5.0, 10.0, 10.0, 5.0]
    groups = [("A", runs[0:2]), ("B", runs[2:4]), ("C", runs[4:5]), ("D", runs[1:2])]
    taken, chosen, passed = launch.whole_cells(
        groups, 1, 1, 25.0, margin=1.0, wall=lambda config, sharing: seconds[config.seed])
    assert taken == ["A", "C", "D"] and passed == ["B"]
    assert [r.config.seed for r in chosen] == [0, 1, 4]


def test_whole_columns_take_a_panels_sizes_smallest_model_first(tmp_path, capsys):
    """A sweep file's whole=true: columns (panel, size) in the order of their models' sizes,
    each taken only if all its runs still to do end by the deadline (one GPU, one run at a
    time, each run 10 s): 2L64D of both panels (one run of p1's already finished) fit the 45 s,
    then 4L64D's two runs would not; a finished run is not run again."""
    from unittest import mock

    from playground.sweep import cli

    def run(panel, size, seed):
        return ["train.device=cpu", f"panel={panel}", f"size={size}", f"seed={seed}",
                f"out_dir={tmp_path}/{panel}_{size}_{seed}"]

    runs = [run(p, z, s) for z in ("4L64D", "2L64D") for p in ("p1", "p2") for s in (0, 1)]
    done = tmp_path / "p1_2L64D_0"
    done.mkdir()
    (done / "summary.json").write_text(json.dumps({"status": "finished"}))
    with mock.patch("playground.sweep.cost.estimate",
                    lambda config, sharing: SimpleNamespace(gpu_s=10.0)):
        chosen = cli.whole_columns(runs, 1, 1, 45.0, margin=1.0)
    assert [o[-1].rpartition("/")[2] for o in chosen] == ["p1_2L64D_1", "p2_2L64D_0",
                                                          "p2_2L64D_1"]
    said = capsys.readouterr().out
    assert "2 of the 4 columns" in said
    assert ("p1 2L64D, p2 2L64D; passed over: p1 4L64D (20 s by itself), p2 4L64D (20 s by "
            "itself)") in said and "even by themselves" not in said
    # by 15 s: p1 2L64D's one run ends in time; the other columns, 20 s each, never could
    with mock.patch("playground.sweep.cost.estimate",
                    lambda config, sharing: SimpleNamespace(gpu_s=10.0)):
        chosen = cli.whole_columns(runs, 1, 1, 15.0, margin=1.0)
    assert [o[-1].rpartition("/")[2] for o in chosen] == ["p1_2L64D_1"]
    assert ("3 of the passed over would not end whole by the deadline even by themselves: "
            "p2 2L64D, p1 4L64D, p2 4L64D") in capsys.readouterr().out


def test_a_run_joins_a_gpu_only_if_its_runs_still_end_in_time(tmp_path):
    """Seed 0's wall time is 20 s × the runs sharing its GPU; a 25 s deadline. Seed 1 of 8 s ×
    fits beside seed 0 by itself (16 s), but in those 16 s seed 0 does 16 / 40 of itself and
    needs 0.6 × 20 s more alone, to 28 s: on one GPU seed 1 waits for seed 0 to end, on two it
    takes the other GPU at once. Seed 1 of 2 s × joins at once: seed 0 is then done at
    4 + 0.9 × 20 = 22 s (taken as shared by two from its start, 40 s, it would not be)."""
    runs = launch.plan([["size=2L64D", "train.device=cpu", f"seed={s}", f"out_dir={tmp_path}/s{s}"]
                        for s in range(2)])
    for joiner, together in ((8.0, False), (2.0, True)):
        def wall(config, sharing, joiner=joiner):
            return (20.0 if config.seed == 0 else joiner) * sharing

        started, left = launch.simulate(runs, 1, 2, 25.0, wall)
        assert not left and [(r.config.seed, round(a, 2)) for r, a, _ in started] == [
            (0, 0.0), (1, 0.0 if together else 13.33)], joiner
        started, _ = launch.simulate(runs, 2, 2, 25.0, wall)
        assert [(r.config.seed, a) for r, a, _ in started] == [(0, 0.0), (1, 0.0)]
        slots = launch.Slots(["0"], 2, 25.0, wall, say=lambda _: None)
        slots.take("0", runs[0], 0.0)
        assert slots.ends("0", runs[1], 0.0) == pytest.approx(28.0 if joiner == 8.0 else 22.0)
        assert (slots.next_start([runs[1]], 0.0) is not None) == together
        slots.give("0", runs[0], 0.0)
        assert slots.next_start([runs[1]], 0.0) == (0, "0", 1)


def test_a_run_counts_the_share_of_the_runs_on_its_gpu_already_done(tmp_path):
    """Seed 0 (20 s alone, 40 s shared by two, margin 1.0) started at 0; at 10 s it has half of
    itself to do. Seed 1 (10 s × the runs sharing) joining then: shared by two, seed 0's half
    takes 20 s and seed 1's whole 20 s, both end at 30 s, before the 35 s deadline. At 21 s
    seed 0 is past its expected time, which says nothing of its end: no run joins it."""
    runs = launch.plan([["size=2L64D", "train.device=cpu", f"seed={s}", f"out_dir={tmp_path}/s{s}"]
                        for s in range(2)])

    def wall(config, sharing):
        return (20.0 if config.seed == 0 else 10.0) * sharing

    slots = launch.Slots(["0"], 2, 35.0, wall, say=lambda _: None, margin=1.0)
    slots.take("0", runs[0], 0.0)
    assert slots.ends("0", runs[1], 10.0) == pytest.approx(30.0)
    assert slots.next_start([runs[1]], 10.0) == (0, "0", 2)
    assert slots.ends("0", runs[1], 21.0) == math.inf
    assert slots.next_start([runs[1]], 21.0) is None


def test_deadline_is_for_the_local_launcher_and_seconds(capsys, monkeypatch):
    from playground.sweep import cli
    from playground.sweep.cli import main

    monkeypatch.setattr(cli, "_gpu_count", lambda: 0)  # as on a CPU machine

    for argv, message in ((["mqar", "deadline=600"], "only the local launcher"),
                          (["mqar", "launcher=local", "deadline=-5"], "expected seconds > 0"),
                          (["mqar", "launcher=local", "deadline=soon"], "expected a number"),
                          (["mqar", "launcher=local", "gpus=0", "deadline=60"],
                           "no GPU is visible"),
                          (["mqar", "launcher=local", "margin=1.2"], "invalid without deadline="),
                          (["mqar", "launcher=local", "deadline=60", "margin=0"],
                           "expected a factor > 0"),
                          (["mqar", "launcher=local", "whole=true"], "invalid without deadline="),
                          (["findings", "launcher=local", "whole=true"],
                           "invalid without deadline=")):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code != 0 and message in capsys.readouterr().err, argv


def test_the_guard_projects_a_gpus_end_as_its_runs_speed_up():
    """Two runs on one GPU at 1 step/s each, 50 and 100 steps left: the first ends at 50 s;
    alone, the second takes its own half of the GPU's compute a step (0.5 s) unless its floor is
    longer: it ends at 75 s without a floor, at 87.5 s with a floor of 0.75 s, at 100 s with a
    floor at (or, taken no higher than its measured step, above) its step now. Four runs as an
    H200 measured them (Llama 8L512D at Mano, 58 ms a step at four, 30 ms alone, 32 ms the
    estimate's floor): the last speeds up ×1.8 once alone, not ×1.33 as the estimate's walls
    at 1-4 a GPU had it (docs/bench/2026-12-02-h200-r5-brevo1)."""
    assert launch.projected_end([(50, 1.0, 0.0), (100, 1.0, 0.0)]) == 75.0
    assert launch.projected_end([(50, 1.0, 0.75), (100, 1.0, 0.75)]) == 87.5
    assert launch.projected_end([(50, 1.0, 1.0), (100, 1.0, 1.0)]) == 100.0
    assert launch.projected_end([(50, 1.0, 9.0), (100, 1.0, 9.0)]) == 100.0
    assert launch.projected_end([(30, 3.0, 0.0)]) == 10.0
    assert launch.projected_end([]) == 0.0
    four = [(1000, 1 / 0.058, 0.032)] * 3 + [(2000, 1 / 0.058, 0.032)]
    assert launch.projected_end(four) == pytest.approx(1000 * 0.058 + 1000 * 0.032)


def _write_rate(out, rows, partial=False):
    out.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"split": "train", "step": 50 * i, "train_time_s": 2.0 * i})
             for i in range(1, rows + 1)]
    lines.insert(1, json.dumps({"split": "eval", "step": 50, "acc": 0.5}))
    tail = '\n{"split": "tr' if partial else "\n"  # a line being written
    (out / "metrics.jsonl").write_text("\n".join(lines) + tail)


def test_the_guard_reads_a_runs_rate_and_stops_the_least_advanced_run_of_a_late_gpu(tmp_path):
    """Rates from metrics.jsonl (25 steps/s; none before three training rows); a GPU whose runs
    would end after the time left loses its least advanced run, one that ends in time none."""
    _write_rate(tmp_path / "a", 12, partial=True)
    assert launch.step_rate(tmp_path / "a") == (600, 25.0)
    _write_rate(tmp_path / "b", 2)
    assert launch.step_rate(tmp_path / "b") is None and launch.step_rate(tmp_path / "c") is None
    runs = launch.plan([["size=2L64D", "train.device=cpu", "train.steps=2000", f"seed={s}",
                         f"out_dir={tmp_path}/r{s}"] for s in range(2)])
    _write_rate(runs[0].out, 12)  # step 600 of 2000: 56 s left at 25 steps/s
    _write_rate(runs[1].out, 8)  # step 400: 64 s; together, with no speed-up, 64 s
    flat = lambda run: math.inf  # noqa: E731 - each at its floor: no faster alone
    assert launch.guard_victim(runs, flat, 64.0 + launch.GUARD_TAIL_S) is None
    assert launch.guard_victim(runs, flat, 63.0 + launch.GUARD_TAIL_S) is runs[1]
    # compute-bound (no floor): alone from 56 s, the second does its last 200 steps at 50/s
    assert launch.guard_victim(runs, lambda run: 0.0, 60.0 + launch.GUARD_TAIL_S) is None
    assert launch.guard_victim(runs, lambda run: 0.0, 59.0 + launch.GUARD_TAIL_S) is runs[1]
    (runs[0].out / "metrics.jsonl").unlink()  # a run still starting: no projection yet
    assert launch.guard_victim(runs, flat, 1.0) is None
    early = launch.plan([["size=2L64D", "train.device=cpu", "train.steps=6000",
                          f"out_dir={tmp_path}/e"]])
    _write_rate(early[0].out, 12)  # steps 50 to 600 of 6,000: under GUARD_MIN_DONE, start-up
    assert launch.guard_victim(early, flat, 1.0) is None
    _write_rate(early[0].out, 13)  # 50 to 650: 600 steps logged, its share
    assert launch.guard_victim(early, flat, 1.0) is early[0]


def test_the_guard_waits_for_a_resumed_run_to_do_its_share_in_its_own_attempt(tmp_path):
    """A run resumed at step 3,000 of 6,000 (an earlier attempt's rows before it, their times
    ending at its checkpoint): from its attempt's start (the file written at T, 8 s of training
    time after the checkpoint) it has logged 150 steps, under GUARD_MIN_DONE; taken from its
    first row, 3,150."""
    run = launch.plan([["size=2L64D", "train.device=cpu", "train.steps=6000",
                        f"out_dir={tmp_path}/r"]])
    run[0].out.mkdir(parents=True)
    rows = [(50 * i, 2.0 * i) for i in range(1, 61)] + [(3000 + 50 * j, 120 + 2.0 * j)
                                                       for j in range(1, 5)]
    (run[0].out / "metrics.jsonl").write_text("".join(
        json.dumps({"split": "train", "step": s, "train_time_s": t}) + "\n" for s, t in rows))
    os.utime(run[0].out / "metrics.jsonl", (1000.0, 1000.0))
    assert [r["step"] for r in launch.train_rows(run[0].out, 993.0)] == [3050, 3100, 3150, 3200]
    late = lambda r: math.inf  # noqa: E731 - at its floor
    assert launch.guard_victim(run, late, 1.0) is run[0]
    assert launch.guard_victim(run, late, 1.0, started=lambda r: 993.0) is None


def test_the_guard_reads_rates_since_the_gpus_runs_last_changed(tmp_path):
    """Ten intervals at 25 steps/s, then five at 50 (a neighbour ended): over the last ten
    intervals the rate mixes both; since the change (the file last written at T, the change
    4.5 s of training time before its last row) it is 50; with the change later than all but
    two rows, not yet measured."""
    out = tmp_path / "r"
    out.mkdir()
    times = [2.0 * i for i in range(11)] + [20.0 + i for i in range(1, 6)]
    (out / "metrics.jsonl").write_text("".join(
        json.dumps({"split": "train", "step": 50 * i, "train_time_s": t}) + "\n"
        for i, t in enumerate(times)))
    os.utime(out / "metrics.jsonl", (1000.0, 1000.0))
    step, mixed = launch.step_rate(out)
    assert step == 750 and mixed == pytest.approx(500 / 15)
    assert launch.step_rate(out, since=1000.0 - 4.5) == (750, 50.0)
    assert launch.step_rate(out, since=1000.0 - 1.5) is None


def test_a_deadline_sweep_stops_a_run_the_guard_projects_past_it(tmp_path, monkeypatch, capsys):
    """Two fake runs on one GPU log 100 steps/s of 1,000 steps (10 s) against a 3 s deadline:
    the guard stops the least advanced; it is not a failure and the sweep says how to resume.
    A third run of the same kind, estimated to fit in the freed slot, does not start: the
    stopped run's pace (its time over the share of its steps done) rescales its kind."""
    real = subprocess.Popen
    script = ("import json, sys, time\nfrom pathlib import Path\nout = Path(sys.argv[1])\n"
              "out.mkdir(parents=True, exist_ok=True)\nf = open(out / 'metrics.jsonl', 'w')\n"
              "for i in range(60):\n"
              "    f.write(json.dumps({'split': 'train', 'step': 5 * i, 'train_time_s': 0.05 * i})"
              " + '\\n'); f.flush(); time.sleep(0.05)\n")

    def fake(command, **kw):
        out = next(a[8:] for a in command if a.startswith("out_dir="))
        return real([sys.executable, "-c", script, out], **kw)

    monkeypatch.setattr(launch.subprocess, "Popen", fake)
    monkeypatch.setattr(launch, "GUARD_EVERY_S", 0.5)
    monkeypatch.setattr(launch, "GUARD_TAIL_S", 0.0)
    monkeypatch.setattr(launch, "CALIBRATE_AFTER_S", 0.0)
    runs = [["size=2L64D", "train.device=cpu", "train.steps=1000", f"seed={s}",
             f"out_dir={tmp_path}/s{s}"] for s in range(3)]
    # estimated 0.53 s alone, 1.07 s shared (walls 0.8 s a run sharing, less the margin 1.5)
    assert launch.run_local(runs, 1, tmp_path / "logs", per_gpu=2, deadline=3.0,
                            wall=lambda config, sharing: 0.8 * sharing) == 0
    out = capsys.readouterr().out
    assert re.search(r"^deadline: .* runs take up to ×\d+\.\d\d of their estimate", out, re.M), out
    assert re.search(r"^1 run\(s\) not started: .*: s2$", out, re.M), out
    assert re.search(r"^deadline guard: GPU 0's runs are projected past the deadline "
                     r"\(\d+ s left\); stopping the least advanced, s[01]$", out, re.M), out
    assert len(re.findall(r"stopped by the deadline guard, the same command resumes it$", out,
                          re.M)) == 1
    assert re.search(r"^run 1/2: s[01] exit 0", out, re.M), out


def test_the_guard_takes_a_runs_floor_from_its_estimate(tmp_path):
    """The floor the guard's projection holds a run's step to is the estimate's small-step floor
    for its shape (``cost.floor_step``), the same for every run of that shape: Llama 8L512D at
    Mano's 64 × 256, compiled, is floor-bound alone (its floor above its compute time)."""
    from playground.sweep import cost

    runs = launch.plan([["task=mano", "size=8L512D", "train.compile=true", "train.batch_size=64",
                         "task.context=256", f"seed={s}", f"out_dir={tmp_path}/m{s}"]
                        for s in range(2)])
    slots = launch.Slots(["0"], 2)
    shape = cost.Shape.of(runs[0].config)
    floor = cost.floor_step(shape)[0]
    assert slots.floor(runs[0]) == slots.floor(runs[1]) == floor
    assert floor > shape.batch * shape.context / cost.compute_rate(shape)[0] > 0


def test_a_sweep_checks_each_runs_config_before_it_launches_any(capsys):
    """Each run's config gets the checks its run makes first that need no device
    (``train.checked_config``), before anything is launched: a Canon setting on the variants
    without Canon layers, or a context too short for the task's longest example, marks those runs
    not launchable, with the run's own error; the others are planned as before."""
    from playground.sweep.cli import dry_run

    runs = [["task=mqar_tiny", "size=2L64D", f"canon={canon}", "model.canon.kernel=3", "seed=0",
             f"out_dir=/nonexistent/{canon}"] for canon in ("none", "B")]
    runs.append(["task=depo_tiny", "size=2L64D", "task.N=16", "task.context=64", "seed=0",
                 "out_dir=/nonexistent/short"])
    planned = launch.plan(runs)
    assert planned[1].error is None and planned[1].config.model.canon.kernel == 3
    assert "model.canon.kernel=3 is invalid" in planned[0].error
    assert re.search(r"task.context=64 is invalid: expected at least \d+ tokens", planned[2].error)
    dry_run(None, runs, "local")
    assert "1 of 3 runs to do (0 finished, 2 not launchable)" in capsys.readouterr().out


def test_runs_join_a_gpu_only_while_their_estimated_memory_fits():
    """With each GPU's memory known, a run joins the runs on a GPU only if their estimated
    memory and its own fit in it; a later run of the queue that fits goes first; a run alone
    always starts; without the GPUs' memory every slot is used."""
    def planned(gb: int, i: int) -> launch.Planned:
        return launch.Planned(i, [f"run{i}"], SimpleNamespace(gb=gb))

    memory = lambda config: config.gb * 10**9  # noqa: E731
    slots = launch.Slots(["0", "1"], 3, capacity={"0": 20 * 10**9, "1": 20 * 10**9},
                         memory=memory)
    queue = [planned(12, 0), planned(30, 1), planned(9, 2), planned(10, 3), planned(2, 4)]
    order = []
    while (start := slots.next_start(queue, 0.0)) is not None:
        run = queue.pop(start[0])
        slots.take(start[1], run, 0.0)
        order.append((run.index, start[1]))
    # 12 alone on GPU 0, 30 alone on GPU 1 (too large to share, larger than the GPU: its own
    # check refuses it); 9 and 10 fit beside neither; 2 beside 12 (14 of 20 GB)
    assert order == [(0, "0"), (1, "1"), (4, "0")]
    assert [r.index for r in queue] == [2, 3]
    slots.give("0", slots.running[0][1], 1.0)  # the 12-GB run ends: 9 joins 2 on GPU 0
    assert slots.next_start(queue, 1.0) == (0, "0", 2)
    free = launch.Slots(["0"], 3, memory=memory)  # no capacity: no memory rule
    free.take("0", planned(30, 5), 0.0)
    assert free.next_start([planned(30, 6)], 0.0) == (0, "0", 2)


def test_a_launch_reads_each_gpus_memory_from_nvidia_smi(monkeypatch):
    """``gpu_memory`` reads the memory of the launch's GPUs from ``nvidia-smi`` (MiB): the total
    less the driver's reserve, the total alone where the reserve is not reported or the field is
    unknown, and nothing where nvidia-smi is missing; the launch says which rule it applies."""
    answers = {"index,memory.total,memory.reserved":
               "0, 81559, 480\n1, 81559, 480\n2, 143771, [N/A]\n",
               "index,memory.total": "0, 81559\n"}
    asked = []

    def smi(command, **kwargs):
        fields = command[1].removeprefix("--query-gpu=")
        asked.append(fields)
        if fields not in answers:
            raise launch.subprocess.CalledProcessError(2, command)
        return SimpleNamespace(stdout=answers[fields])

    monkeypatch.setattr(launch.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(launch.subprocess, "run", smi)
    assert launch.gpu_memory(["0", "2"]) == {"0": 81079 * 2**20, "2": 143771 * 2**20}
    assert asked == ["index,memory.total,memory.reserved"]
    assert "GPU 0 85 GB, GPU 2 151 GB" in launch.memory_rule_text(launch.gpu_memory(["0", "2"]))
    del answers["index,memory.total,memory.reserved"]  # an nvidia-smi without the field
    assert launch.gpu_memory(["0", "2"]) == {"0": 81559 * 2**20}

    def missing(*args, **kwargs):
        raise FileNotFoundError("nvidia-smi")

    monkeypatch.setattr(launch.subprocess, "run", missing)
    assert launch.gpu_memory(["0"]) == {}
    monkeypatch.setattr(launch.shutil, "which", lambda name: None)
    assert launch.gpu_memory(["0"]) == {}
    assert "unknown" in launch.memory_rule_text({})


def test_a_run_is_expected_to_hold_its_estimate_rescaled_by_its_kinds_measured_peaks(tmp_path):
    """A sweep run's memory is its CUDA estimate (state and activations: ``run_bytes``); beside
    others it is expected to hold that × the largest measured / estimated peak that the finished
    runs of its kind (mixer, task) recorded, where above 1, + ``PROCESS_BYTES``."""
    from playground.tasks import build_task

    runs = launch.plan([[*TINY, "canon=ABCD", f"seed={s}", f"out_dir={tmp_path}/r{s}"]
                        for s in range(3)])
    cfg = to_objects(runs[0].config)
    need = budget.estimate(cfg, len(build_task(cfg.task).vocab), torch.device("cuda"))
    estimate = need.state + need.activations
    assert launch.run_bytes(runs[0].config) == estimate
    said = []
    slots = launch.Slots(["0"], 3, say=said.append)
    assert slots.need(runs[2]) == estimate + budget.PROCESS_BYTES
    for run, ratio in ((runs[0], 0.8), (runs[1], 2.5)):
        run.out.mkdir(parents=True)
        (run.out / "summary.json").write_text(json.dumps(
            {"status": "finished", "peak_memory_bytes": int(estimate * ratio)}))
    slots.learn_memory(runs[0])  # below its estimate: the estimate stands
    assert slots.need(runs[2]) == estimate + budget.PROCESS_BYTES and not said
    slots.learn_memory(runs[1])
    assert slots.need(runs[2]) == pytest.approx(estimate * 2.5 + budget.PROCESS_BYTES, rel=1e-6)
    assert said == ["memory: attention/depo runs held up to ×2.50 their estimated memory; the "
                    "next are expected to hold that"]
    slots.learn_memory(launch.Planned(9, [], runs[0].config, tmp_path / "none"))  # no record
    assert len(said) == 1
    (runs[2].out).mkdir(parents=True)  # what the allocator held counts where recorded
    (runs[2].out / "summary.json").write_text(json.dumps(
        {"status": "finished", "peak_memory_bytes": int(estimate * 2),
         "peak_reserved_bytes": int(estimate * 3)}))
    slots.learn_memory(runs[2])
    assert slots.peaks[("attention", "depo")] == pytest.approx(3.0, rel=1e-6)


def test_a_dry_run_of_runs_sharing_a_gpu_prints_what_the_largest_would_hold(tmp_path, capsys):
    """With ``per_gpu`` above 1 the dry run prints the memory the largest runs to do are expected
    to hold together, each as a launch expects it (``Slots.need``)."""
    from playground.run.budget import size_text
    from playground.sweep.cli import dry_run

    runs = [[*TINY, f"canon={c}", "seed=0", f"out_dir={tmp_path}/{c}"] for c in ("none", "ABCD")]
    dry_run(None, runs, "local", per_gpu=2)
    slots = launch.Slots([], 2)
    total = sum(slots.need(run) for run in launch.plan(runs))
    out = capsys.readouterr().out
    assert f"the 2 largest runs together {size_text(total)}" in out, out
    dry_run(None, runs, "local", per_gpu=1)
    assert "expected GPU memory" not in capsys.readouterr().out

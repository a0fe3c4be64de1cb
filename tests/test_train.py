"""The trainer: learning, run directory, config errors (resume after kill -9:
test_reliability.py)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from playground.config import TrainConfig
from playground.run import rundir as runs
from playground.run.evaluate import evaluate_run
from playground.run.loop import lr_at
from playground.run.train import run

TINY = ["task.N=8", "task.V=8", "task.context=96", "task.eval_size=32", "size=2L64D",
        "train.batch_size=8", "train.log_every=1", "train.warmup_steps=2"]


def losses(run_dir: Path) -> list[tuple[int, float]]:
    return [(r["step"], r["loss"]) for r in runs.MetricsLog(run_dir / "metrics.jsonl").records()
            if r["split"] == "train"]


def test_tiny_run_learns_and_writes_run_dir(make_cfg, tmp_path):
    summary = run(make_cfg(*TINY, "train.steps=40", "train.eval_every=20", "train.ckpt_every=20"))
    out = tmp_path / "run"
    assert {p.name for p in out.iterdir()} >= {"config.yaml", "metrics.jsonl", "summary.json",
                                               "checkpoints"}
    log = losses(out)
    assert [s for s, _ in log] == list(range(1, 41))
    first, last = sum(v for _, v in log[:5]) / 5, sum(v for _, v in log[-5:]) / 5
    assert last < 0.8 * first
    saved = runs.read_json(out / "summary.json")
    assert saved["status"] == "finished" and saved["step"] == 40
    assert saved["params"]["total"] > 0 and saved["primary_metric"] == "acc_at_K"
    # Llama: one path (the linear mixers record theirs, tests/test_mixers.py)
    assert saved["kernels"] == {}
    assert saved["device_name"] == "cpu" and saved["versions"]["torch"] == runs.torch.__version__
    assert saved["host"] == runs.socket.gethostname() and "cuda_visible_devices" in saved
    assert set(saved["metrics"]) >= {"acc", "tok_acc", "acc_k1", "acc_k2", "acc_at_K", "acc_at_K2"}
    assert summary["metrics"] == saved["metrics"]
    evals = [r for r in runs.MetricsLog(out / "metrics.jsonl").records() if r["split"] == "eval"]
    assert [r["step"] for r in evals] == [20, 40]
    # playground-eval on the final checkpoint reproduces the run's final metrics exactly
    again = evaluate_run(out, device="cpu")
    assert again["step"] == 40 and again["metrics"] == saved["metrics"]


def test_versions_record_the_kernel_packages_that_are_installed(monkeypatch):
    """A run's ``versions`` name the kernel packages present (fla-core for GLA, ...) and leave out
    those absent, as well as the packages every run has."""
    from importlib import metadata

    installed = {"fla-core": "0.6.0", "triton": "3.6.0"}

    def version(name):
        if name in installed:
            return installed[name]
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", version)
    found = runs.versions()
    assert {k: found[k] for k in runs.KERNEL_PACKAGES if k in found} == installed
    assert {"python", "torch", "numpy", "omegaconf", "cuda"} <= set(found)


def test_placement_names_the_device_host_and_the_gpus_given(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert runs.placement(runs.torch.device("cpu")) == {
        "device_name": "cpu", "host": runs.socket.gethostname(), "cuda_visible_devices": "3"}
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert runs.placement(runs.torch.device("cpu"))["cuda_visible_devices"] is None


def test_the_logged_gradient_norm_is_each_intervals_mean_and_largest(make_cfg, tmp_path):
    """``grad_norm`` / ``grad_norm_max``: the mean and the largest of the interval's global
    gradient norms, before clipping (a run clipped hard logs the same first norm)."""
    def train_log(name: str) -> list[dict]:
        return [r for r in runs.MetricsLog(tmp_path / name / "metrics.jsonl").records()
                if r["split"] == "train"]

    for name, extra in (("every", ()), ("three", ("train.log_every=3",)),
                        ("clipped", ("train.grad_clip=1e-6",))):
        run(make_cfg(*TINY, "train.steps=6", *extra, run=name))
    every = train_log("every")
    norms = [r["grad_norm"] for r in every]
    assert all(r["grad_norm"] == r["grad_norm_max"] > 0 for r in every)
    three = train_log("three")
    assert [r["grad_norm"] for r in three] == pytest.approx([sum(norms[:3]) / 3,
                                                             sum(norms[3:]) / 3])
    assert [r["grad_norm_max"] for r in three] == pytest.approx([max(norms[:3]), max(norms[3:])])
    assert train_log("clipped")[0]["grad_norm"] == pytest.approx(norms[0]) and norms[0] > 1e-3


def test_finished_run_is_skipped_and_changed_config_refused(make_cfg):
    cfg = make_cfg(*TINY, "train.steps=3")
    run(cfg)
    assert run(cfg)["status"] == "finished"
    with pytest.raises(ValueError, match=r"task.V: 8 -> 9"):
        run(make_cfg(*TINY, "train.steps=3", "task.V=9"))


@pytest.mark.slow
def test_deterministic_kernels_run_everything_and_change_nothing_on_cpu(tmp_path):
    """train.deterministic=true trains and evaluates under PyTorch's deterministic-only mode (an op
    without a deterministic kernel would raise), records it, and on CPU logs exactly the losses
    of a normal run. Subprocesses: the mode is process-wide."""
    cmd = [sys.executable, "-m", "playground.run.train", "wandb.mode=disabled",
           "train.progress=false",
           "train.device=cpu", *TINY, "train.steps=6", "train.eval_every=3", "canon=ABCD"]
    for name in ("false", "true"):
        subprocess.run([*cmd, f"train.deterministic={name}", f"out_dir={tmp_path / name}"],
                       check=True, capture_output=True, timeout=300)
        assert runs.read_json(tmp_path / name / "summary.json")["deterministic"] is (name == "true")
    assert len(losses(tmp_path / "true")) == 6
    assert losses(tmp_path / "true") == losses(tmp_path / "false")


def test_picking_the_device_first_calls_every_vector_math_op_once_single_threaded():
    """Before a run builds anything, each op that PyTorch may hand to MKL's vector math has run
    once, on one element, in float32 and float64 (docs/runs.md, "Repeatability": a first call of cos
    on a loaded machine once gave a fixed alternative result, and the whole CPU run drifted)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from playground.run.device import VML_OPS, pick_device

    class Calls(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if args and isinstance(args[0], torch.Tensor) and args[0].numel() == 1:
                self.seen.add((func.__name__.split(".")[0], args[0].dtype))
            return func(*args, **(kwargs or {}))

    with Calls() as calls:
        assert pick_device("cpu") == torch.device("cpu")
    want = {(op.__name__, dtype) for op in VML_OPS for dtype in (torch.float32, torch.float64)}
    assert len(want) == 2 * len(VML_OPS) == 32 and want <= calls.seen, want - calls.seen


def test_gradient_accumulation_matches_full_batch(make_cfg):
    a = run(make_cfg(*TINY, "train.steps=4", run="full"))
    b = run(make_cfg(*TINY, "train.steps=4", "train.micro_batch_size=2", run="micro"))
    assert math.isclose(a["final_loss"], b["final_loss"], rel_tol=1e-4)


def test_lr_schedules():
    t = TrainConfig(steps=100, lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    assert lr_at(5, t) == 0.5 and lr_at(10, t) == 1.0
    assert math.isclose(lr_at(100, t), 0.1) and math.isclose(lr_at(55, t), 0.55)
    lin = TrainConfig(steps=100, lr=1.0, schedule="linear", min_lr_ratio=0.0)
    assert lin.warmup_steps == 0 and lr_at(1, lin) == 0.99 and lr_at(100, lin) == 0.0


@pytest.mark.parametrize("mode", ["reduce-overhead", "max-autotune"])
def test_cuda_graphs_need_the_whole_model_compiled(mode):
    """Blocks compiled alone share one graph; CUDA graphs would overwrite one block's output
    with the next's, so the combination is refused naming the key (the whole model is fine)."""
    from playground.errors import ConfigError

    with pytest.raises(ConfigError, match="train.compile_mode.*compile_scope=model"):
        TrainConfig(compile=True, compile_scope="blocks", compile_mode=mode)
    assert TrainConfig(compile=True, compile_scope="model", compile_mode=mode).compile_mode == mode
    no_graphs = TrainConfig(compile=True, compile_scope="blocks",
                            compile_mode="max-autotune-no-cudagraphs")
    assert no_graphs.compile_scope == "blocks"


@pytest.mark.slow
@pytest.mark.parametrize("override,key", [("task.NN=3", "task.NN"), ("train.lr=fast", "train.lr"),
                                          ("model.canon.positions=AX", "model.canon.positions"),
                                          ("train.micro_batch_size=5", "train.micro_batch_size"),
                                          ("model.mixer.rope_fraction=2",
                                           "model.mixer.rope_fraction"),
                                          ("train.compile_scope=layers", "train.compile_scope"),
                                          ("train.compile_scope=blocks", "train.compile_scope"),
                                          ("train.compile_mode=fastest", "train.compile_mode"),
                                          ("train.compile_mode=max-autotune",
                                           "train.compile_mode")])
def test_bad_config_fails_at_start_naming_the_key(tmp_path, override, key):
    out = tmp_path / "bad"
    proc = subprocess.run([sys.executable, "-m", "playground.run.train", "wandb.mode=disabled",
                           f"out_dir={out}", override], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert key in proc.stderr + proc.stdout
    assert not (out / "metrics.jsonl").exists()


@pytest.mark.slow
def test_compiling_each_block_alone_gives_the_model_s_outputs_and_one_shared_graph():
    """train.compile_scope=blocks: every block compiled in place, the model around them eager;
    the blocks are alike, so dynamo traces one graph for all of them (CPU, inductor)."""
    import torch

    from playground.config import ModelConfig
    from playground.layers.canon import CanonConfig
    from playground.mixers.attention import AttentionConfig
    from playground.model import build_model
    from playground.run.loop import compiled

    torch._dynamo.reset()
    model = build_model(ModelConfig(n_layers=3, d_model=32, head_dim=16, mixer=AttentionConfig(),
                                    canon=CanonConfig(positions="ABCD")),
                        11, seed=0)
    ids = torch.randint(0, 11, (2, 9), generator=torch.Generator().manual_seed(0))
    eager = model(ids)
    torch._dynamo.utils.counters.clear()
    step = compiled(model, TrainConfig(compile=True, compile_scope="blocks"))
    assert step is model and all(b._compiled_call_impl is not None for b in model.blocks)
    torch.testing.assert_close(step(ids), eager, rtol=1e-4, atol=1e-4)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
    assert compiled(model, TrainConfig(compile=False)) is model


@pytest.mark.parametrize("scope", ["model", "blocks"])
def test_compile_mode_reaches_torch_compile(monkeypatch, scope):
    """train.compile_mode is passed to torch.compile as its mode, for the model or each block."""
    import torch

    from playground.config import ModelConfig
    from playground.mixers.attention import AttentionConfig
    from playground.model import build_model
    from playground.run.loop import compiled

    seen = []
    monkeypatch.setattr(torch, "compile", lambda module, **kw: seen.append(kw["mode"]) or module)
    model = build_model(ModelConfig(n_layers=2, d_model=32, head_dim=16,
                                    mixer=AttentionConfig()), 11, seed=0)
    compiled(model, TrainConfig(compile=True, compile_scope=scope,
                                compile_mode="max-autotune-no-cudagraphs"))
    assert seen == ["max-autotune-no-cudagraphs"] * (1 if scope == "model" else 2)


def test_metrics_are_json_lines(make_cfg, tmp_path):
    run(make_cfg(*TINY, "train.steps=2"))
    for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines():
        assert isinstance(json.loads(line)["step"], int)

"""Data parallel training (CPU, gloo, 2 processes): the same examples in the same order, and the
same loss curve as one process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from playground.run import rundir as runs

ARGS = ["wandb.mode=disabled", "train.progress=false", "train.device=cpu", "task.N=8", "task.V=8",
        "task.context=96", "task.eval_size=16", "size=2L64D", "train.batch_size=8", "train.steps=8",
        "train.warmup_steps=2", "train.log_every=1", "train.eval_every=4", "train.ckpt_every=4"]


def losses(out):
    return [r["loss"] for r in runs.MetricsLog(out / "metrics.jsonl").records()
            if r["split"] == "train"]


@pytest.mark.slow
@pytest.mark.parametrize("micro,sync", [("0", "ddp"), ("2", "ddp"), ("0", "flat"), ("2", "flat")])
def test_two_processes_match_one(tmp_path, micro, sync):
    """DDP's gradient sum or one flat all-reduce (train.grad_sync), whole or in micro-batches:
    the loss curve of one process."""
    one, two = tmp_path / "one", tmp_path / "two"
    extra = [f"train.micro_batch_size={micro}", f"train.grad_sync={sync}"]
    subprocess.run([sys.executable, "-m", "playground.run.train", *ARGS, *extra, f"out_dir={one}"],
                   check=True, capture_output=True)
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc_per_node=2",
                           "-m", "playground.run.train", *ARGS, *extra, f"out_dir={two}"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert runs.read_json(two / "summary.json")["world_size"] == 2
    a, b = losses(one), losses(two)
    assert len(a) == len(b) == 8, (a, b, proc.stderr[-3000:])
    assert all(abs(x - y) <= 1e-4 * max(1.0, abs(x))
               for x, y in zip(a, b)), (a, b, proc.stderr[-3000:])
    assert len(runs.checkpoint_paths(two / "checkpoints")) == 2


@pytest.mark.slow
def test_batch_not_divisible_by_world_size_is_refused(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc_per_node=2", "-m", "playground.run.train", *ARGS,
                           "train.batch_size=5", "train.micro_batch_size=0",
                           f"out_dir={tmp_path / 'bad'}"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode != 0 and "train.batch_size" in proc.stderr + proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("how", ["train.ddp_bucket_graphs=false", "train.ddp_bucket_graphs=true",
                                 "train.grad_sync=flat"])
def test_compiled_two_processes_match_one(tmp_path, how):
    """Compiled data parallel, as one graph with DDP's all-reduce after the backward, as one
    graph per DDP bucket (train.ddp_bucket_graphs) or without DDP (train.grad_sync=flat): the
    loss curve of one compiled process."""
    compiled = [*ARGS, "train.compile=true", "train.steps=4", "train.eval_every=0",
                "train.ckpt_every=100"]
    one, two = tmp_path / "one", tmp_path / "two"
    subprocess.run([sys.executable, "-m", "playground.run.train", *compiled, f"out_dir={one}"],
                   check=True, capture_output=True)
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc_per_node=2", "-m", "playground.run.train", *compiled,
                           how, f"out_dir={two}"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = losses(one), losses(two)
    assert len(a) == len(b) == 4, (a, b)
    assert all(abs(x - y) <= 1e-4 * max(1.0, abs(x)) for x, y in zip(a, b)), (a, b)
    # what torch.compile did, in the summary: one graph, no break, no CUDA graphs asked for
    assert runs.read_json(one / "summary.json")["compile"] == {
        "graphs": 1, "graph_breaks": 0, "cudagraph_skips": 0}


@pytest.mark.slow
def test_a_run_says_when_its_cuda_graphs_did_not_run(tmp_path):
    """``train.compile_mode=reduce-overhead`` where CUDA graphs cannot run (here the CPU): the
    summary counts the skipped graph and the run's log warns at its first log line."""
    out = tmp_path / "r"
    subprocess.run([sys.executable, "-m", "playground.run.train", *ARGS, "train.compile=true",
                    "train.compile_mode=reduce-overhead", "train.steps=3", "train.eval_every=0",
                    f"out_dir={out}"], check=True, capture_output=True)
    facts = runs.read_json(out / "summary.json")["compile"]
    assert facts["graphs"] == 1 and facts["cudagraph_skips"] >= 1, facts
    assert "run without CUDA graphs although train.compile_mode=reduce-overhead" in (
        out / "train.log").read_text()


def test_bucket_graphs_need_compile_and_ddp():
    from playground.config import compose, to_objects
    from playground.errors import ConfigError

    with pytest.raises(ConfigError, match="train.ddp_bucket_graphs"):
        to_objects(compose(["train.ddp_bucket_graphs=true"]))
    with pytest.raises(ConfigError, match="train.ddp_bucket_graphs=True is invalid.*grad_sync=ddp"):
        to_objects(compose(["train.compile=true", "train.ddp_bucket_graphs=true",
                            "train.grad_sync=flat"]))
    with pytest.raises(ConfigError, match="train.grad_sync"):
        to_objects(compose(["train.grad_sync=nccl"]))


def test_flat_grad_sync_puts_each_gradient_in_its_view_of_the_sum(tmp_path):
    """FlatGradSync in a one-process gloo group (the sum is the gradient itself): each dtype's
    gradients land in one buffer, every ``.grad`` becomes its view of it with its values, and a
    parameter without a gradient gets zeros (the ranks' buffers must line up)."""
    import torch
    import torch.distributed as dist

    from playground.run.device import FlatGradSync

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    try:
        gen = torch.Generator().manual_seed(0)
        params = [torch.nn.Parameter(torch.randn(3, 4, generator=gen)),
                  torch.nn.Parameter(torch.randn(5, generator=gen).to(torch.bfloat16)),
                  torch.nn.Parameter(torch.randn(2, 2, generator=gen)),
                  torch.nn.Parameter(torch.randn(7, generator=gen))]
        grads = [torch.randn(p.shape, generator=gen).to(p.dtype) for p in params[:3]]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        sync = FlatGradSync(params)
        sync.broadcast()  # one rank: its own weights
        sync()
        flat32 = sync.groups[torch.float32][1]
        assert flat32.numel() == 12 + 4 + 7 and sync.groups[torch.bfloat16][1].numel() == 5
        for p, g in zip(params, grads):
            assert torch.equal(p.grad, g) and p.grad.dtype == p.dtype
        assert torch.equal(params[3].grad, torch.zeros(7))
        flat32.fill_(2.0)  # the views share the buffer
        assert params[0].grad.eq(2).all() and params[3].grad.eq(2).all()
    finally:
        dist.destroy_process_group()

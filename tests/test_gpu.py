"""GPU checks (run with ``pytest -m gpu`` on a CUDA machine)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from playground.config import ModelConfig
from playground.layers.canon import Canon, CanonConfig
from playground.mixers.attention import AttentionConfig
from playground.model import build_model
from playground.run import rundir as runs
from playground.run.train import run

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]


def test_canon_cuda_matches_cpu_reference():
    g = torch.Generator().manual_seed(0)
    layer = Canon(96, CanonConfig(positions="A", activation="silu", bias=True))
    layer.reset_parameters(g)
    x = torch.randn(3, 50, 96, generator=g, requires_grad=True)
    y = layer(x)
    y.square().sum().backward()
    ref = (y.detach(), x.grad.clone(), layer.weight.grad.clone())
    layer_cuda = Canon(96, layer.cfg).cuda()
    layer_cuda.load_state_dict(layer.state_dict())
    xc = x.detach().cuda().requires_grad_()
    yc = layer_cuda(xc)
    yc.square().sum().backward()
    for a, b in zip(ref, (yc.detach(), xc.grad, layer_cuda.weight.grad)):
        torch.testing.assert_close(b.cpu(), a, rtol=1e-4, atol=1e-4)


def test_canon_bench_reports_wall_and_device_time():
    """``playground-bench canon``: per backend the wall clock and the kernels' own GPU time."""
    from playground.bench.measure import canon_speed

    rows = canon_speed([256], batch=2, context=100)
    assert {r["backend"] for r in rows} >= {"torch conv1d (eager)", "torch shifted (compiled)"}
    for r in rows:
        assert (r["batch"], r["context"], r["width"]) == (2, 100, 256)
        assert 0 < r["device_us"] and 0 < r["us"] and r["floor_us"] > 0, r


def test_step_profile_lists_gpu_kernels():
    """``playground-bench profile`` on CUDA: the step's GPU kernels by their own time, and how busy
    the GPU was (the kernels' total over the wall; the profiled steps run slower than the timed
    ones, so allow a margin above 1)."""
    from playground.bench.measure import step_profile

    r = step_profile(["task=depo_tiny", "size=2L64D", "train.batch_size=4", "canon=ABCD"], steps=3,
                     warmup=2, top=40)
    assert r["entries"] == "GPU kernels" and 0 < r["busy"] < 3, r
    assert r["top"] and all(e["ms_per_step"] >= 0 and e["calls_per_step"] > 0 for e in r["top"])
    # kernels, not the operators launching them
    assert not any(e["name"].startswith("aten::") for e in r["top"])


def test_swiglu_mlp_with_fused_canon_d_matches_the_torch_backend():
    """The MLP's fused Canon-D + SwiGLU kernel (backend fused) and the Canon kernel with SwiGLU
    apart (backend auto on CUDA) against the plain PyTorch composition (backend torch): output
    and every parameter's gradient, fp32."""
    from playground.layers.mlp import MLP

    x = torch.randn(2, 300, 256, device="cuda", requires_grad=True)
    grads = []
    for backend in ("fused", "auto", "torch"):
        torch.manual_seed(0)
        mlp = MLP(256, "swiglu", CanonConfig(positions="D", backend=backend)).cuda()
        y = mlp(x)
        grads.append([y, *torch.autograd.grad(y.square().sum(), [x, *mlp.parameters()])])
    for got in grads[:2]:
        for a, b in zip(got, grads[2]):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["rope_abcd", "alibi", "gla_canon_abcd", "mamba2_conv1d_canon_ab",
                                  "gdn_noconv_canon_abcd", "gla_dynamic_b_all_linear"])
def test_cuda_graph_decoding_step_equals_the_eager_step(name):
    """The decoding step that ``generate(graph=True)`` captures as a CUDA graph and replays gives,
    token after token, the logits of the same fixed-shape step run eagerly (the CPU tests check
    those against ordinary cached steps); then ``generate`` itself, graph or not, same tokens."""
    from test_generate import FIXED_SHAPE_MODELS, PROMPTS

    from playground.model import _left_pad, _Step, generate

    model = FIXED_SHAPE_MODELS[name]().cuda()
    ids, valid = _left_pad(PROMPTS, 0, torch.device("cuda"))
    tokens = torch.randint(1, 23, (len(PROMPTS), 8), device="cuda",
                           generator=torch.Generator("cuda").manual_seed(0))
    runs = []
    with torch.no_grad():
        for graph in (False, True):
            cache = model.new_cache(capacity=ids.shape[1] + tokens.shape[1])
            model(ids, cache, valid)
            if graph:
                step = _Step(model, cache, len(PROMPTS), torch.device("cuda"), graph=True)
                runs.append([step(tokens[:, i]).clone() for i in range(tokens.shape[1])])
            else:
                cache.fix_shapes(len(PROMPTS), torch.device("cuda"))
                runs.append([model(tokens[:, i : i + 1], cache)[:, -1]
                             for i in range(tokens.shape[1])])
            assert cache.length == ids.shape[1] + tokens.shape[1]
    torch.testing.assert_close(torch.stack(runs[1]), torch.stack(runs[0]), rtol=1e-5, atol=1e-5)
    # no stop token: every row runs 16 steps
    a = generate(model, PROMPTS * 4, max_new=16, batch_size=8)
    b = generate(model, PROMPTS * 4, max_new=16, batch_size=8, graph=True)
    # under bf16 autocast attention over the whole capacity may round differently: a near-tie
    # of a random tiny model can flip a row; a broken graph flips nearly all of them
    assert sum(x.tokens.tolist() == y.tokens.tolist() for x, y in zip(a, b)) >= 0.8 * len(a)


@pytest.mark.parametrize("rope", [(1.0, 1.0), (0.25, 1.0), (1.0, 0.5), (0.0, 1.0)],
                         ids=["rope", "quarter", "half_heads", "nope"])
def test_attention_with_fused_canon_b_matches_the_torch_backend(rope):
    """Attention reading Canon-B through the fused Canon + head split + RoPE kernel (backend fused;
    auto where RoPE turns whole heads), and through the Canon kernel with RoPE apart (backend
    triton; auto otherwise), against the plain PyTorch composition: output and every parameter's
    gradient, fp32, for full, quarter, half-heads RoPE and NoPE."""
    from playground.mixers.attention import Attention

    x = torch.randn(2, 300, 256, device="cuda", requires_grad=True)
    grads = []
    for backend in ("fused", "auto", "triton", "torch"):
        torch.manual_seed(0)
        att = Attention(256, 64, AttentionConfig(rope_fraction=rope[0], rope_heads=rope[1]),
                        CanonConfig(positions="B", backend=backend, activation="silu",
                                    bias=True)).cuda()
        y = att(x)
        grads.append([y, *torch.autograd.grad(y.square().sum(), [x, *att.parameters()])])
    for got in grads[:3]:
        for a, b in zip(got, grads[3]):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_cached_decoding_on_cuda():
    cfg = ModelConfig(n_layers=2, d_model=128, head_dim=64, mixer=AttentionConfig(),
                      canon=CanonConfig(positions="ABCD"))
    model = build_model(cfg, 50, seed=0).cuda().eval()
    ids = torch.randint(0, 50, (4, 33), device="cuda")
    with torch.no_grad():
        full = model(ids)
        cache = model.new_cache()
        steps = [model(ids[:, :10], cache)] + [model(ids[:, i : i + 1], cache)
                                               for i in range(10, 33)]
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-4, atol=1e-4)


def test_bf16_forward_close_to_fp32():
    cfg = ModelConfig(n_layers=2, d_model=128, head_dim=64, mixer=AttentionConfig(),
                      canon=CanonConfig(positions="ABCD"))
    model = build_model(cfg, 50, seed=0).cuda().eval()
    ids = torch.randint(0, 50, (2, 64), device="cuda")
    with torch.no_grad():
        ref = model(ids)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            low = model(ids)
    assert (low - ref).abs().max() < 0.1 * ref.abs().max()


def test_tiny_run_trains_on_cuda(make_cfg):
    summary = run(make_cfg("train.device=cuda", "train.steps=60", "train.eval_every=0",
                           "task.context=256", "train.batch_size=16"))
    assert summary["status"] == "finished" and summary["device"].startswith("cuda")
    assert summary["device_name"] == torch.cuda.get_device_name()
    assert summary["peak_memory_bytes"] > 0 and summary["final_loss"] < 2.0
    assert summary["peak_reserved_bytes"] >= summary["peak_memory_bytes"]


def _train_losses(out, *overrides: str, procs: int = 1) -> list[float]:
    launch = (["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={procs}"]
              if procs > 1 else [])
    cmd = [sys.executable, *launch, "-m", "playground.run.train", "wandb.mode=disabled",
           "train.progress=false", "train.device=cuda", "size=2L128D", "task.context=256",
           "train.batch_size=16", "train.steps=30", "train.log_every=1", "train.eval_every=0",
           "train.warmup_steps=2", f"out_dir={out}", *overrides]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return [r["loss"] for r in runs.MetricsLog(out / "metrics.jsonl").records()
            if r["split"] == "train"]


@pytest.mark.parametrize("backbone", [("mixer=rope", "canon=ABCD", "train.compile=true"),
                                      ("mixer=gla", "canon=ABCD"), ("mixer=mamba2",)],
                         ids=["rope_canon_compiled", "gla_canon", "mamba2"])
def test_deterministic_runs_repeat_bit_for_bit(tmp_path, backbone):
    """train.deterministic=true: two runs of one config log identical losses, to the last bit.
    Without it the two runs may differ (printed, not asserted: it depends on the kernels picked)."""
    det = [_train_losses(tmp_path / f"det{i}", *backbone, "train.deterministic=true")
           for i in (0, 1)]
    plain = [_train_losses(tmp_path / f"plain{i}", *backbone) for i in (0, 1)]
    print(f"{backbone}: plain runs differ by up to {max(abs(a - b) for a, b in zip(*plain)):.3g}")
    assert len(det[0]) == 30 and det[0] == det[1]


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")
@pytest.mark.parametrize("sync", ["ddp", "flat"])
def test_two_gpus_log_the_losses_of_one(tmp_path, sync):
    """Data parallel over NCCL, each rank building its shards and the next round swapped by a
    thread during the steps: two GPUs log the loss curve of one (float32, so that only the order
    of the gradient sum differs)."""
    args = ("mixer=rope", "canon=ABCD", "train.dtype=float32", f"train.grad_sync={sync}")
    one = _train_losses(tmp_path / "one", *args)
    two = _train_losses(tmp_path / "two", *args, procs=2)
    assert runs.read_json(tmp_path / "two" / "summary.json")["world_size"] == 2
    assert len(one) == len(two) == 30
    assert all(abs(a - b) <= 2e-3 * max(1.0, abs(a)) for a, b in zip(one, two)), (one, two)


def test_a_launch_reads_the_gpus_memory_and_names_a_real_out_of_memory():
    """On a real GPU: ``launch.gpu_memory`` reads the memory a process can have from nvidia-smi
    (its total less the driver's reserve: what PyTorch reports, to the MiB; the total alone was
    480 MiB above it on an H100 80GB HBM3, driver 580, 2026-12-05), and ``budget.oom_text``
    turns PyTorch's own out-of-memory error into its one line, the allocation asked for and the
    GPU's capacity kept, its advice left out."""
    from playground.run.budget import oom_text
    from playground.sweep import launch

    total = torch.cuda.get_device_properties(0).total_memory
    read = launch.gpu_memory(["0"])
    assert abs(read["0"] - total) < 2**21, (read, total)
    with pytest.raises(torch.OutOfMemoryError) as caught:
        torch.empty(4 * total, dtype=torch.uint8, device="cuda")
    text = oom_text(caught.value)
    assert text.startswith("out of GPU memory: CUDA out of memory. Tried to allocate"), text
    assert "total capacity" in text and "PYTORCH_CUDA_ALLOC_CONF" not in text, text

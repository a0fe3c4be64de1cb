"""What a run will hold in memory, estimated before anything is written, against what its device
has.

The estimate is deliberately simple (a guard against the impossible, not a profiler):

- **state**: every parameter's fp32 weight, gradient and AdamW's two moments (16 bytes), the
  parameters counted on a model built on the ``meta`` device (exact, allocating nothing);
- **activations** kept for the backward: blocks × windows per forward pass × ``task.context`` ×
  ``model.d_model`` × :data:`ACT_VALUES` values (about what a pre-norm block with attention
  through SDPA and a SwiGLU MLP keeps: Korthikanti et al. 2022 count 17 for a GPT block; GDN's
  and Mamba2's blocks :data:`ACT_VALUES_BY_MIXER`), 2 bytes each under bf16 autocast, else 4;
  plus :data:`CONV_VALUES` per token and channel of every Canon layer and short convolution
  (their channels counted on the same ``meta`` build); plus the logits (fp32, with their
  softmax and its gradient);
- **batches**: the global batch as the loader hands it over (int64 tokens, bool mask, int32
  segments: 13 bytes a token), on the host.

A run whose estimate exceeds the device's whole memory is refused (:func:`check_memory`, naming the
keys of the largest part); one that exceeds what is free now gets a warning with the estimate.
Against the peaks the compiled CUDA runs of ``results/mini/runs`` measured
(``torch.cuda.max_memory_allocated``, H100 and H200, 2026-11-24 to 12-05), measured ÷ estimated is
0.82-1.04 for the 88 Llama fig7 runs where the training step sets the peak (Depo, Brevo, Mano),
0.82-1.13 over the 232 records of every backbone at 8L512D and above, up to 1.30 for the 4L128D
runs (length generalisation). Not counted is what an evaluation holds
at its own batch (``train.eval_batch_size``): Lano's, with its generation's decoding cache,
peaked at up to 2.2 × the estimate. Runs sharing a GPU
(a local sweep's ``per_gpu``) each hold their estimate (:func:`gpu_bytes`; the launcher rescales
it by the peaks the finished runs of its kind recorded), plus the process's CUDA context and the
allocator's reserve (:data:`PROCESS_BYTES`).

What a run will cost in time and disk (:func:`cost`), as simply: :data:`FLOPS_PER_TOKEN` per
parameter and trained token at an assumed rate of the device (:data:`DEVICE_FLOPS`), and
:data:`CKPT_BYTES` per parameter in each checkpoint. A run on a CPU that would take longer than
:data:`LONG_RUN_S` or write checkpoints larger than :data:`BIG_CHECKPOINT` gets a warning
(:func:`check_cost`) before anything is built.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from playground.config import Config, uses_bf16
from playground.errors import ConfigError, raised_from
from playground.run.device import check_device, memory_of, warm_vector_math, world

STATE_BYTES = 16  # per parameter: fp32 weight, gradient, AdamW's exp_avg and exp_avg_sq
ACT_VALUES = 20  # activations kept per block, token and model channel
# ... for the mixers that keep more or fewer: fitted to the recorded peaks of results/mini (Depo,
# Brevo and Mano runs, the Canon and logits terms taken off; H100 and H200, 2026-11-24 to 12-05):
# Llama 13.7-26.8 (median 18.8, 194 runs), GLA 17.5-22.5 (19.7, 30), GDN 26.5-31.6 (27.8, 6),
# Mamba2's blocks (two a layer, no MLP) 12.2-16.4 (13.4, 24).
ACT_VALUES_BY_MIXER = {"gdn": 28, "mamba2": 14}
# Per token and channel of a Canon layer or short conv: its output kept beside its input. The
# compiled fig7 runs with Canon-ABCD over the same runs without (results/mini/runs, H100 and
# H200, 2026-11-24 to 12-05): 0.7-1.9 values, median 1.27.
CONV_VALUES = 1.3
# A process's GPU memory beyond its allocated peak: CUDA context, kernels and the caching
# allocator's reserve. Two Depo1 8L768D runs sharing an H200 (peaks 9.28 GB each) held 21.2 GB
# (nvidia-smi, docs/bench/2026-12-05-h200-lr-check-depo1-8l768d): 1.3 GB each; two Mano 8L768D runs
# sharing an H100 (peaks 6.37 and 6.58 GB) held 15.0 GB, one of them alone 7.6 GB
# (docs/bench/2026-12-05-h100-mano-8l768d-lr5e-4): 1.05 GB each. The larger is kept.
PROCESS_BYTES = 1.3e9
LOGIT_VALUES = 3  # logits, their softmax and its gradient, per token and vocabulary entry (fp32)
BATCH_BYTES = 13  # host bytes per token of a global batch: int64 token, bool mask, int32 segment

CKPT_BYTES = 12  # per parameter in a checkpoint: fp32 weight, AdamW's exp_avg and exp_avg_sq
FLOPS_PER_TOKEN = 6  # per parameter and trained token: 2 forward, 4 backward (attention's own
# quadratic term and the loader are left out: small at these contexts)
# Training FLOP/s assumed of one process, on the low side on purpose (most machines finish
# sooner than estimated; the banner's measured ETA then says how much). CPU: a few cores in
# fp32; a 2-core development machine multiplies large fp32 matrices at about 7e10 FLOP/s, and
# tiny models (2L64D) reach only 1e9-2e10, bound by the overhead per op (their runs are short
# anyway). CUDA: a fraction of an H100's bf16 peak (~1e15) that small models reach.
DEVICE_FLOPS = {"cpu": 5e10, "cuda": 1e14}
LONG_RUN_S = 3600.0  # a CPU run estimated to take longer than this gets a warning
BIG_CHECKPOINT = 500e6  # bytes: a CPU run whose checkpoints are larger gets a warning


@dataclass(frozen=True)
class Estimate:
    """Bytes a run holds, by part, and the parameter count behind ``state``."""

    params: int
    state: int
    activations: int
    batches: int

    def where(self, device: torch.device) -> list[tuple[torch.device, int, str]]:
        """(device, bytes, what) for each memory the run fills: the batches sit in the host's RAM,
        the rest on ``device`` (one sum on CPU)."""
        model = (f"weights, gradients and AdamW states of {self.params:,} parameters: "
                 f"{size_text(self.state)}; activations: {size_text(self.activations)}")
        batches = f"batches: {size_text(self.batches)}"
        if device.type == "cpu":
            return [(device, self.state + self.activations + self.batches, f"{model}; {batches}")]
        return [(device, self.state + self.activations, model),
                (torch.device("cpu"), self.batches, batches)]


def model_counts(cfg: Config, vocab_size: int) -> tuple[int, int]:
    """(parameters, conv channels) of the model, from a build on the ``meta`` device: its
    parameters (tied weights once), and the channels of its Canon layers and short convolutions
    summed over the blocks."""
    from playground.layers.canon import Canon, DynamicCanon
    from playground.model import LM

    warm_vector_math()  # before any CPU op of this process (run/device.py: repeatability)
    with torch.device("meta"):
        model = LM(cfg.model, vocab_size)
    convs = sum(m.width for m in model.modules() if isinstance(m, (Canon, DynamicCanon)))
    return model.param_counts()["total"], convs


def parameter_count(cfg: Config, vocab_size: int) -> int:
    """The model's parameters (tied weights once), from a build on the ``meta`` device."""
    return model_counts(cfg, vocab_size)[0]


def estimate(cfg: Config, vocab_size: int, device: torch.device) -> Estimate:
    """The memory one process of the run holds (data parallel: each rank's share of a batch)."""
    t, m = cfg.train, cfg.model
    share = t.batch_size // world()[1]
    tokens = min(t.micro_batch_size or share, share) * cfg.task.context  # per forward pass
    params, convs = model_counts(cfg, vocab_size)
    per_value = 2 if uses_bf16(device, t.dtype) else 4
    values = ACT_VALUES_BY_MIXER.get(m.mixer.name, ACT_VALUES)
    act = m.n_layers * m.depth_multiplier * tokens * m.d_model * values * per_value
    act += int(tokens * convs * CONV_VALUES * per_value)
    act += tokens * vocab_size * LOGIT_VALUES * 4
    batches = t.batch_size * cfg.task.context * BATCH_BYTES
    return Estimate(params, params * STATE_BYTES, act, batches)


def gpu_bytes(cfg: Config, vocab_size: int) -> int:
    """The run's estimated GPU memory (state and activations on CUDA, :func:`estimate`), as
    the peak it records (``peak_memory_bytes``) measures it: without :data:`PROCESS_BYTES`."""
    need = estimate(cfg, vocab_size, torch.device("cuda"))
    return need.state + need.activations


def oom_text(err: BaseException) -> str | None:
    """``out of GPU memory: …`` (PyTorch's account of the GPU's memory, the processes holding
    it included, without its advice) for a CUDA out-of-memory error behind ``err`` (itself, or
    a cause it wraps, as compilation does), else None."""
    oom = raised_from(err, lambda e: isinstance(e, torch.OutOfMemoryError))
    if oom is None:
        return None
    message = " ".join(str(oom).split()).split(" Of the allocated memory")[0]
    return f"out of GPU memory: {message.rstrip('.')}"


def size_text(n: float) -> str:
    """Bytes as ``12.3 GB`` (powers of 1000)."""
    units = ["B", "kB", "MB", "GB", "TB"]
    while n >= 1000 and len(units) > 1:
        n, units = n / 1000, units[1:]
    return f"{n:.3g} {units[0]}"


def blame(cfg: Config, need: Estimate, what: str) -> str:
    """The keys that set the largest part of ``what`` (one of :meth:`Estimate.where`'s), with their
    values."""
    t, m = cfg.train, cfg.model
    parts = {"batches": need.batches if "batches" in what else 0,
             "activations": need.activations if "activations" in what else 0,
             "state": need.state if "parameters" in what else 0}
    largest = max(parts, key=parts.__getitem__)
    if largest == "state":
        return f"model.d_model={m.d_model}, model.n_layers={m.n_layers} (size={m.size})"
    if largest == "activations" and t.micro_batch_size:
        return f"train.micro_batch_size={t.micro_batch_size}, task.context={cfg.task.context}"
    return f"train.batch_size={t.batch_size}, task.context={cfg.task.context}"


def device_name(device: torch.device) -> str:
    if device.type == "cpu":
        return "this machine's RAM"
    return f"{device} ({torch.cuda.get_device_name(device)})"


def check_memory(cfg: Config, vocab_size: int) -> str | None:
    """Refuse a run whose estimated memory (:func:`estimate`) exceeds the whole memory of its
    device or host (a ConfigError naming the keys of the largest part, with the estimate); return
    a warning when it exceeds what is free now, else None. ``train.device`` is checked first."""
    device = check_device(cfg.train.device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", world()[2] if world()[1] > 1 else torch.cuda.current_device())
    need = estimate(cfg, vocab_size, device)
    warnings = []
    for place, size, what in need.where(device):
        free, total = memory_of(place)
        if size > total:
            raise ConfigError(f"{blame(cfg, need, what)} is invalid: the run needs about "
                              f"{size_text(size)} of memory ({what}), more than the "
                              f"{size_text(total)} of {device_name(place)}")
        if size > free:
            warnings.append(f"warning: the run may need about {size_text(size)} of memory "
                            f"({what}); {device_name(place)} has {size_text(free)} free now")
    return "\n".join(warnings) or None


def duration_text(seconds: float) -> str:
    """Seconds as ``0.4s``, ``45s``, ``3m05s``, ``2h07m`` or ``3d04h``."""
    if seconds < 9.95:
        return f"{max(seconds, 0):.1f}s"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


@dataclass(frozen=True)
class Cost:
    """What a run will take: its parameters, the tokens of one process's share of a step (data
    parallel splits the batch), the estimated seconds of such a step, the steps, and the bytes
    of one checkpoint."""

    params: int
    tokens: int
    step_s: float
    steps: int
    checkpoint: int

    @property
    def run_s(self) -> float:
        return self.step_s * self.steps


def cost(cfg: Config, params: int, device: torch.device) -> Cost:
    """The estimate: :data:`FLOPS_PER_TOKEN` × ``params`` (all of them: the head is a real
    matrix product) × the tokens of a step, at :data:`DEVICE_FLOPS` of ``device``."""
    t = cfg.train
    tokens = t.batch_size // world()[1] * cfg.task.context
    rate = DEVICE_FLOPS.get(device.type, DEVICE_FLOPS["cpu"])
    return Cost(params, tokens, FLOPS_PER_TOKEN * params * tokens / rate, t.steps,
                params * CKPT_BYTES)


def check_cost(cfg: Config, vocab_size: int) -> str | None:
    """A warning when a run on a CPU is estimated (:func:`cost`) to train longer than
    :data:`LONG_RUN_S` or to write checkpoints larger than :data:`BIG_CHECKPOINT`; else None.
    ``train.steps`` must be resolved (not 0)."""
    device = check_device(cfg.train.device)
    if device.type != "cpu":
        return None
    c = cost(cfg, parameter_count(cfg, vocab_size), device)
    if c.run_s <= LONG_RUN_S and c.checkpoint <= BIG_CHECKPOINT:
        return None
    return (f"warning: this run is large for a CPU: size={cfg.model.size} "
            f"({c.params / 1e6:.1f}M parameters), about {duration_text(c.step_s)} a step, "
            f"{duration_text(c.run_s)} for {c.steps:,} steps (estimated: {FLOPS_PER_TOKEN} × "
            f"parameters × {c.tokens:,} tokens a step at an assumed {DEVICE_FLOPS['cpu']:.0e} "
            f"FLOP/s), checkpoints of {size_text(c.checkpoint)} each "
            f"({cfg.train.keep_checkpoints} kept). On a CPU a tiny size (size=2L64D, 2L128D) "
            "trains in minutes; this run wants a GPU (or fewer train.steps).")

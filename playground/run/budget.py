"""What a run will hold in memory, estimated before anything is written, against what its device
has.

The estimate is deliberately simple (a guard against the impossible, not a profiler):

- **state**: every parameter's fp32 weight, gradient and AdamW's two moments (16 bytes), the
  parameters counted on a model built on the ``meta`` device (exact, allocating nothing);
- **activations** kept for the backward: blocks × windows per forward pass × ``task.context`` ×
  ``model.d_model`` × :data:`ACT_VALUES` values (about what a pre-norm block with attention
  through SDPA, a SwiGLU MLP and Canon layers keeps: Korthikanti et al. 2022 count 17 for a GPT
  block without Canon), 2 bytes each under bf16 autocast, else 4; plus the logits (fp32, with
  their softmax and its gradient);
- **batches**: the global batch as the loader hands it over (int64 tokens, bool mask, int32
  segments: 13 bytes a token), on the host.

A run whose estimate exceeds the device's whole memory is refused (:func:`check_memory`, naming the
keys of the largest part); one that exceeds what is free now gets a warning with the estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from playground.config import Config, uses_bf16
from playground.errors import ConfigError
from playground.run.device import check_device, memory_of, warm_vector_math, world

STATE_BYTES = 16  # per parameter: fp32 weight, gradient, AdamW's exp_avg and exp_avg_sq
ACT_VALUES = 20  # activations kept per block, token and model channel
LOGIT_VALUES = 3  # logits, their softmax and its gradient, per token and vocabulary entry (fp32)
BATCH_BYTES = 13  # host bytes per token of a global batch: int64 token, bool mask, int32 segment


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


def parameter_count(cfg: Config, vocab_size: int) -> int:
    """The model's parameters (tied weights once), from a build on the ``meta`` device."""
    from playground.model import LM

    warm_vector_math()  # before any CPU op of this process (run/device.py: repeatability)
    with torch.device("meta"):
        return LM(cfg.model, vocab_size).param_counts()["total"]


def estimate(cfg: Config, vocab_size: int, device: torch.device) -> Estimate:
    """The memory one process of the run holds (data parallel: each rank's share of a batch)."""
    t, m = cfg.train, cfg.model
    share = t.batch_size // world()[1]
    tokens = min(t.micro_batch_size or share, share) * cfg.task.context  # per forward pass
    params = parameter_count(cfg, vocab_size)
    per_value = 2 if uses_bf16(device, t.dtype) else 4
    act = m.n_layers * m.depth_multiplier * tokens * m.d_model * ACT_VALUES * per_value
    act += tokens * vocab_size * LOGIT_VALUES * 4
    batches = t.batch_size * cfg.task.context * BATCH_BYTES
    return Estimate(params, params * STATE_BYTES, act, batches)


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

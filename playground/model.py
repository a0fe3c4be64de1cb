"""The language model: embedding → blocks (mixer + MLP, pre-norm RMSNorm, residual, Canon hooks)
→ final norm → head. One class for every backbone; the mixer and MLP kinds are configuration.

Canon points: A on the mixer input (after its norm, width d), B inside the mixer, C on the MLP
input (after its norm, width d), D inside the MLP.

Decoding: ``cache = model.new_cache()``, then ``model(ids_chunk, cache)`` repeatedly (a prompt
chunk, then one token at a time); logits equal those of one full forward pass. Prompts of
different lengths share a batch by left padding with ``valid`` (see ``layers/seq.py``).
:func:`generate` does this for a batch of prompts (the tasks that evaluate by generating: Brevo,
Lano): sorted by length, left-padded, prefilled once, then one cached step per new token; a
harness that wants to show its progress says so with :func:`generation_progress`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from playground.config import ModelConfig, autocast_for, plugin
from playground.layers.canon import Canon, DynamicCanon, canon_at
from playground.layers.mlp import MLP, MoE
from playground.layers.norms import RMSNorm
from playground.layers.seq import Cache, Seq


def build_mixer(cfg: ModelConfig) -> nn.Module:
    mixer = plugin("playground.mixers", cfg.mixer.name, "model.mixer.name")
    return mixer(cfg.d_model, cfg.head_dim, cfg.mixer, cfg.canon)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.d_model
        self.norm1 = RMSNorm(d, eps=cfg.norm_eps)
        self.canon_a = canon_at(cfg.canon, "A", d)
        self.mixer = build_mixer(cfg)
        self.mlp = None
        if cfg.mlp != "none":
            self.norm2 = RMSNorm(d, eps=cfg.norm_eps)
            self.canon_c = canon_at(cfg.canon, "C", d)
            self.mlp = MoE(d, cfg.moe_experts) if cfg.mlp == "moe" else MLP(d, cfg.mlp, cfg.canon)

    def forward(self, x: torch.Tensor, seq: Seq | None = None) -> torch.Tensor:
        x = x + self.mixer(self.canon_a.normed(self.norm1, x, seq), seq)
        if self.mlp is not None:
            x = x + self.mlp(self.canon_c.normed(self.norm2, x, seq), seq)
        return x


class LM(nn.Module):
    def __init__(self, cfg: ModelConfig, vocab_size: int):
        super().__init__()
        self.cfg, self.vocab_size = cfg, vocab_size
        self.embed = nn.Embedding(vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers * cfg.depth_multiplier))
        self.norm = RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        self.head = nn.Linear(cfg.d_model, vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.head.weight = self.embed.weight
        self._moe = [m for m in self.modules() if isinstance(m, MoE)]

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Normal(0, init_std) weights; residual output projections scaled by 1/sqrt(2·layers)
        (GPT-2); Canon layers (static and dynamic) use their own initialisation; norms start
        at 1; then each mixer's ``reset_parameters`` (if any) sets its own parameters (e.g.
        Mamba2's A and dt, mimetic structure) on top of the generic pass."""
        std, own = self.cfg.init_std, set()
        for name, module in self.named_modules():
            if id(module) in own:
                continue
            if isinstance(module, (Canon, DynamicCanon)):
                module.reset_parameters(generator)
                own.update(id(m) for m in module.modules())
            elif isinstance(module, nn.RMSNorm):
                nn.init.ones_(module.weight)
            elif isinstance(module, (nn.Linear, nn.Embedding)) and not (
                module is self.head and self.cfg.tie_embeddings
            ):
                residual_out = name.endswith(("mixer.out", "mlp.down"))
                scale = 1 / math.sqrt(2 * len(self.blocks)) if residual_out else 1.0
                nn.init.normal_(module.weight, 0.0, std * scale, generator=generator)
        for block in self.blocks:
            if hasattr(block.mixer, "reset_parameters"):
                block.mixer.reset_parameters(generator)

    def aux_loss(self) -> torch.Tensor | None:
        """Sum of the auxiliary losses of the last forward pass (MoE load balancing), or None."""
        losses = [m.aux_loss for m in self._moe if m.aux_loss is not None]
        return torch.stack(losses).sum() if losses else None

    def new_cache(self, capacity: int | None = None) -> Cache:
        """An empty decoding cache; ``capacity``: the total length the decoding will reach."""
        return Cache(capacity)

    def forward(self, ids: torch.Tensor, cache: Cache | None = None,
                valid: torch.Tensor | None = None,
                segments: torch.Tensor | None = None) -> torch.Tensor:
        """ids: [B, T] → logits [B, T, V] (float32). ``cache`` continues a decoding;
        ``valid`` [B, T] marks real tokens (False at padding, e.g. left-padded prompts);
        ``segments`` [B, T] keeps packed examples apart (``data.isolate_examples``)."""
        seq = Seq.build(ids, cache, valid, segments)
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x, seq)
        if seq is not None:
            seq.advance(ids.shape[1])
        return self.head(self.norm(x)).float()

    def kernel_paths(self, device: torch.device) -> dict[str, str]:
        """Which path each mixer kind takes for a training pass on ``device``, for mixers that have
        several (GLA, Gated DeltaNet, Mamba2's SSD: ``torch``, ``fla``, ``mamba_ssm``); runs and
        benchmarks record it, so a fallback to the PyTorch path shows in the record."""
        return {b.mixer.cfg.name: b.mixer.backend(device.type == "cuda")
                for b in self.blocks if hasattr(b.mixer, "backend")}

    def param_counts(self) -> dict[str, int]:
        """Parameter counts: total (tied weights once), embedding+head, Canon, and the rest."""
        params = {id(p): (n, p) for n, p in self.named_parameters()}.values()
        total = sum(p.numel() for _, p in params)
        canon = sum(p.numel() for n, p in params if ".canon_" in n)
        embed = sum(p.numel() for n, p in params if n.startswith(("embed.", "head.")))
        return {"total": total, "embedding": embed, "canon": canon, "non_embedding": total - embed}


def build_model(cfg: ModelConfig, vocab_size: int, seed: int = 0) -> LM:
    """The model with weights drawn from a private generator seeded with ``seed``."""
    model = LM(cfg, vocab_size)
    model.reset_parameters(torch.Generator().manual_seed(seed))
    return model


# -- batched generation with the decoding cache ------------------------------------------------


@dataclass
class Generation:
    tokens: np.ndarray  # int32[n]: generated tokens, the stop token excluded
    stopped: bool  # True if a stop token ended it (False: it hit max_new)


# Progress = a callable that starts one generation of ``total`` decoding steps and returns the
# callable told ``done`` steps as they pass (the last call: ``done == total``)
Progress = Callable[[int], Callable[[int], None]]
_PROGRESS: ContextVar[Progress | None] = ContextVar("generation_progress", default=None)


@contextlib.contextmanager
def _within(var: ContextVar, value) -> Iterator[None]:
    """``var`` holds ``value`` inside the ``with`` block, its previous value after it."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def generation_progress(progress: Progress) -> contextlib.AbstractContextManager[None]:
    """Within: each :func:`generate` calls ``progress(total)`` once, ``total`` being its decoding
    steps at most (one per batch and new token), then the callable it returned with the steps
    done after each step (a batch that stops early counts its remaining steps done). Who shows
    it, and how, is the caller's (the training loop's rank 0, ``playground.run.loop``)."""
    return _within(_PROGRESS, progress)


_GRAPHS: ContextVar[bool] = ContextVar("decoding_graphs", default=False)


def decoding_graphs(on: bool) -> contextlib.AbstractContextManager[None]:
    """Within: each :func:`generate` that is not told ``graph`` decodes with ``graph=on`` (the
    evaluations of a run with ``train.eval_graphs``, whatever task calls ``generate``)."""
    return _within(_GRAPHS, on)


@torch.no_grad()
def generate(model, prompts: Sequence[Sequence[int]], max_new: int, stop: Sequence[int] = (),
             temperature: float = 0.0, batch_size: int = 64, seed: int = 0,
             pad_id: int = 0, use_cache: bool = True,
             graph: bool | None = None) -> list[Generation]:
    """Continue each prompt by up to ``max_new`` tokens: greedy (``temperature=0``) or sampled
    at ``temperature`` from a generator seeded with ``seed`` (same seed, same samples).
    ``use_cache=False`` re-runs the whole prefix for every token (a baseline for benchmarks).
    ``graph``: after the prefill, decode in fixed-shape steps (``Cache.fix_shapes``), on CUDA
    captured once per batch as a CUDA graph and replayed per token (a step is otherwise bound by
    the host's kernel launches); elsewhere the same steps run eagerly; None: as
    :func:`decoding_graphs` says (off by default). The same tokens either way in float32; under
    bf16 autocast the fixed-shape attention over the whole cache may round a near-tie the other
    way, so a sampled row can differ (``tests/test_gpu.py``)."""
    if graph is None:
        graph = _GRAPHS.get()
    device = next(model.parameters()).device
    gen = torch.Generator(device=device).manual_seed(seed)
    stop_ids = torch.tensor(sorted(set(stop)), dtype=torch.long, device=device)
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    out: list[Generation | None] = [None] * len(prompts)
    was_training = model.training
    model.eval()
    progress = _PROGRESS.get()
    told = progress(math.ceil(len(order) / batch_size) * max_new) if progress else None
    for n, lo in enumerate(range(0, len(order), batch_size)):
        idx = order[lo : lo + batch_size]
        tick = None if told is None else lambda step, base=n * max_new: told(base + step)
        rows = _generate_batch(model, [prompts[i] for i in idx], max_new, stop_ids, temperature,
                               gen, pad_id, device, use_cache, graph, tick)
        if tick is not None:
            tick(max_new)
        for i, row in zip(idx, rows):
            out[i] = row
    model.train(was_training)
    return out  # type: ignore[return-value]


def _left_pad(prompts: Sequence[Sequence[int]], pad_id: int,
              device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    valid = torch.zeros(len(prompts), width, dtype=torch.bool)
    for r, p in enumerate(prompts):
        if len(p):
            ids[r, width - len(p):] = torch.as_tensor(np.asarray(p), dtype=torch.long)
            valid[r, width - len(p):] = True
    return ids.to(device), valid.to(device)


def _pick(logits: torch.Tensor, temperature: float, gen: torch.Generator) -> torch.Tensor:
    """Next token per row from the last position's logits [B, V]."""
    if temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=gen).squeeze(1)


def _generate_batch(model, prompts, max_new, stop_ids, temperature, gen, pad_id, device,
                    use_cache: bool, graph: bool, tick=None) -> list[Generation]:
    # one autocast region for the whole decode: weights are cast to bf16 once, not every step
    with autocast_for(device):
        return _decode(model, prompts, max_new, stop_ids, temperature, gen, pad_id, device,
                       use_cache, graph, tick)


class _Step:
    """One cached decoding step, token [B] -> logits [B, V]. With ``graph``: fixed shapes; on
    CUDA the first step runs eagerly (warming up every kernel), then one step is captured as a
    CUDA graph that every later call replays after copying its tokens into the graph's input."""

    def __init__(self, model, cache: Cache, batch: int, device: torch.device, graph: bool):
        self.model, self.cache = model, cache
        self.cuda_graph = graph and device.type == "cuda"
        if graph:
            cache.fix_shapes(batch, device)
        self.replay: torch.cuda.CUDAGraph | None = None

    def __call__(self, nxt: torch.Tensor) -> torch.Tensor:
        if self.replay is not None:
            self.ids.copy_(nxt[:, None])
            self.replay.replay()
            self.cache.length += 1  # what the captured step's Python side did once, at capture
            return self.logits
        logits = self.model(nxt[:, None], self.cache)[:, -1]
        if self.cuda_graph:
            self.ids, self.replay = nxt[:, None].clone(), torch.cuda.CUDAGraph()
            length = self.cache.length
            with torch.cuda.graph(self.replay):  # recorded, not run: the cache is unchanged
                self.logits = self.model(self.ids, self.cache)[:, -1]
            self.cache.length = length
        return logits


def _decode(model, prompts, max_new, stop_ids, temperature, gen, pad_id, device, use_cache,
            graph, tick=None) -> list[Generation]:
    """``tick(steps)``: told the steps decoded so far, after each (a progress display)."""
    ids, valid = _left_pad(prompts, pad_id, device)
    cache = model.new_cache(capacity=ids.shape[1] + max_new) if use_cache else None
    padded = not bool(valid.all())
    logits = model(ids, cache, valid if padded else None)[:, -1]
    b = len(prompts)
    step_fn = _Step(model, cache, b, device, graph) if use_cache and max_new > 1 else None
    produced = torch.empty(b, max_new, dtype=torch.long, device=device)
    done = torch.zeros(b, dtype=torch.bool, device=device)
    length = torch.full((b,), max_new, dtype=torch.long, device=device)
    for step in range(max_new):
        nxt = _pick(logits, temperature, gen)
        produced[:, step] = nxt
        hit = torch.isin(nxt, stop_ids) & ~done
        length = torch.where(hit, torch.full_like(length, step), length)
        done |= hit
        if tick is not None:
            tick(step + 1)
        if step % 16 == 15 and bool(done.all()):  # a host sync only every 16 tokens
            break
        if step + 1 < max_new:
            if use_cache:
                logits = step_fn(nxt)
            else:
                ids = torch.cat([ids, nxt[:, None]], dim=1)
                valid = torch.cat([valid, torch.ones_like(valid[:, :1])], dim=1)
                logits = model(ids, None, valid if padded else None)[:, -1]
    produced, length, done = produced.cpu().numpy(), length.cpu().numpy(), done.cpu().numpy()
    return [Generation(produced[r, : length[r]].astype(np.int32), bool(done[r])) for r in range(b)]

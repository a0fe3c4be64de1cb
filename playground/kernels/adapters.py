"""Optional GPU kernels for the linear mixers, behind import guards.

- GLA: ``fla.ops.gla.chunk_gla`` (fla-core, the ``gpu`` extra).
- Mamba2's SSD: ``mamba_ssm``'s ``mamba_chunk_scan_combined`` (its forward and backward as custom
  ops, :func:`mamba_ssd`) if installed, else
  ``fla.ops.simple_gla.chunk_simple_gla`` with q=C, k=B, v=x·dt, g=A·dt per head. Only
  mamba_ssm's Triton kernels are used, so it may be installed without its CUDA extensions
  (the ``mamba`` extra with ``MAMBA_SKIP_CUDA_BUILD=TRUE``, docs/usage.md): :func:`kernel_module`
  then enters the package without running its ``__init__``, which imports them.
- Gated DeltaNet: ``fla.ops.gated_delta_rule.chunk_gated_delta_rule``.
- Canon through ``causal_conv1d.causal_conv1d_fn`` (the package of the paper's code release;
  ``model.canon.backend=causal_conv1d``) and through fla's ``ShortConvolution`` kernel
  (``fla.modules.causal_conv1d``, Triton; ``model.canon.backend=fla``), for comparison with ours.

Nothing here is imported on CPU: :func:`pick_backend` looks for the packages only when the
input lives on a CUDA device, so CPU-only use never touches Triton. Each kernel is tested equal
to the PyTorch reference in ``playground/mixers/scan.py`` (tests/test_mixers_gpu.py).

Autotuning: fla's and mamba_ssm's Triton kernels autotune over up to ~36 configurations each on
first use, which costs minutes on a fresh machine (see docs/mixers.md). With
``autotune: restricted`` (the default) :func:`restrict_autotune` keeps at most two
configurations per kernel (fewest pipeline stages, warps nearest 4), which is also more
reproducible: the choice does not depend on timing noise. ``autotune: full`` leaves them alone.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import sys
from functools import cache

import torch

log = logging.getLogger(__name__)
BACKENDS_GLA = ("auto", "torch", "fla")
BACKENDS_SSD = ("auto", "torch", "fla", "mamba_ssm")
BACKENDS_GDN = ("auto", "torch", "fla")
AUTOTUNE = ("restricted", "full")
_MODULES = {"fla": "fla.ops", "mamba_ssm": "mamba_ssm.ops.triton"}
EXTRAS = {"fla": "gpu", "mamba_ssm": "mamba"}  # the extra of pyproject.toml that installs each
# The packages used through one submodule alone, which needs nothing their ``__init__`` imports
# (mamba_ssm's imports its CUDA extensions, ``selective_scan_cuda``, built only from source).
_ENTRY = {"mamba_ssm": "mamba_ssm.ops.triton.ssd_combined"}


def kernel_module(name: str):
    """Import module ``name``; where it belongs to a package of ``_ENTRY`` whose ``__init__``
    fails to import, the package is entered without running that ``__init__``."""
    top = name.split(".")[0]
    if top in _ENTRY and top not in sys.modules:
        try:
            importlib.import_module(top)
        except ImportError as err:
            log.info("%s does not import whole (%s): using its %s alone", top, err, _ENTRY[top])
            sys.modules[top] = importlib.util.module_from_spec(importlib.util.find_spec(top))
    return importlib.import_module(name)


@torch.compiler.assume_constant_result
def available(package: str) -> bool:
    """True if ``package``'s kernels import (checked once, and only when asked). The mixers ask
    in their forward; under torch.compile this runs once in plain Python and is a constant to
    the graph. Traced instead, a first import ran the package's own code through dynamo, which
    failed on fla's version check, so a fresh compiled GLA run fell back to the PyTorch path."""
    return _available(package)


@cache
def _available(package: str) -> bool:
    if importlib.util.find_spec(package) is None:
        return False
    try:
        kernel_module(_ENTRY.get(package, package))
    except Exception as err:  # a broken GPU install must not break the CPU reference path
        log.warning("%s is installed but does not import (%s); using the PyTorch path",
                    package, err)
        return False
    return True


@torch.compiler.assume_constant_result
def fla_gated_backward_ok() -> bool:
    """fla refuses its gated chunk backward (``chunk_bwd_dqkwg`` with g: ``simple_gla``, our
    Mamba2 SSD, and the gated delta rule) on Hopper GPUs with Triton in [3.4.0, 3.7.1), where
    Triton miscompiles it (fla issue #640); there the SSD uses the PyTorch path (or mamba_ssm)
    instead, and so does Gated DeltaNet. Checked once; a constant to torch.compile (the mixers
    ask in their forward, and dynamo would trace through an ``lru_cache`` wrapper, warning)."""
    return _fla_gated_backward_ok()


@cache
def _fla_gated_backward_ok() -> bool:
    if not torch.cuda.is_available() or importlib.util.find_spec("triton") is None:
        return True
    import triton

    version = tuple(int(p) for p in triton.__version__.split("+")[0].split(".")[:3] if p.isdigit())
    hopper = torch.cuda.get_device_capability()[0] == 9
    return not (hopper and (3, 4, 0) <= version < (3, 7, 1))


def pick_backend(requested: str, on_cuda: bool, stateful: bool, order: tuple[str, ...]) -> str:
    """The backend for one call: ``torch`` on CPU, with a decoding state (the kernels are used
    for whole-sequence training/eval passes only), or when no kernel package imports; otherwise
    the first available of ``order`` (``auto``) or exactly the requested one."""
    if requested == "torch" or stateful:
        return "torch"
    if requested == "auto":
        if not on_cuda:
            return "torch"
        return next((b for b in order if available(b)), "torch")
    if not on_cuda or not available(requested):
        raise RuntimeError(f"model.mixer.backend={requested} needs a CUDA device and the "
                           f"'{requested}' package (the {EXTRAS[requested]!r} extra: "
                           "docs/usage.md#optional-packages); use backend=auto")
    return requested


def _autotuners(package: str):
    """Every Triton Autotuner reachable from the loaded modules of ``package``'s kernels."""
    from triton.runtime.autotuner import Autotuner

    seen = set()
    for name, module in list(sys.modules.items()):
        if not name.startswith(_MODULES[package]) or module is None:
            continue
        for obj in vars(module).values():
            while obj is not None and not isinstance(obj, Autotuner) and hasattr(obj, "fn"):
                obj = obj.fn  # unwrap @triton.heuristics around @triton.autotune
            if isinstance(obj, Autotuner) and id(obj) not in seen:
                seen.add(id(obj))
                yield obj


# The configuration that the full search picked for each kernel on an H200 at 12L768D (B·T =
# 16 × 2048; 2026-11-26, docs/bench/2026-11-26-h200-mamba/autotune_*.jsonl): block sizes, warps,
# stages. The restricted space is that one configuration where the kernel offers it (else its own
# two). mamba_ssm's SSD (Mamba2: head dim 96, state 64, chunk 64): its kernels took 56 ms of a step
# restricted to their own two, 35 ms with the tuned ones among them. fla's GLA (4 heads, keys 96,
# values 192); a kernel name that fla shares between its ops (chunk_fwd_kernel_h,
# chunk_bwd_kernel_dh: also GDN's) takes the GLA pick there too.
TUNED = {
    "_bmm_chunk_fwd_kernel": ({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32}, 2, 4),
    "_bmm_chunk_bwd_kernel": ({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_CS": 32}, 2, 4),
    "_chunk_cumsum_fwd_kernel": ({"BLOCK_SIZE_H": 16}, 4, 3),
    "_chunk_cumsum_bwd_kernel": ({"BLOCK_SIZE_H": 16}, 4, 3),
    "_chunk_state_fwd_kernel": ({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64,
                                 "BLOCK_SIZE_K": 32}, 4, 4),
    "_chunk_state_bwd_db_kernel": ({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64}, 4, 3),
    "_state_passing_fwd_kernel": ({"BLOCK_SIZE": 1024}, 4, 3),
    "_state_passing_bwd_kernel": ({"BLOCK_SIZE": 2048}, 4, 3),
    "_chunk_scan_fwd_kernel": ({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32}, 4, 4),
    "_chunk_scan_bwd_dstates_kernel": ({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64,
                                        "BLOCK_SIZE_K": 32}, 4, 4),
    "_chunk_scan_bwd_dc_kernel": ({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64}, 4, 3),
    "_chunk_scan_bwd_dcb_kernel": ({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32}, 4, 3),
    "_chunk_scan_bwd_ddAcs_stable_kernel": ({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 32}, 4, 3),
    "_chunk_scan_chunk_state_bwd_dx_kernel": ({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128,
                                               "BLOCK_SIZE_K": 32}, 4, 4),
    "chunk_local_cumsum_vector_kernel": ({"BS": 32}, 2, 3),
    "chunk_fwd_kernel_h": ({"BK": 32, "BV": 64}, 1, 3),
    "chunk_bwd_kernel_dh": ({"BK": 32, "BV": 64}, 2, 3),
    "chunk_gla_fwd_A_kernel_intra_sub_inter": ({"BK": 32}, 1, 2),
    "chunk_gla_fwd_A_kernel_intra_sub_intra": ({}, 1, 2),
    "chunk_gla_fwd_kernel_o": ({"BK": 64, "BV": 128}, 4, 4),
    "chunk_gla_bwd_kernel_intra": ({}, 4, 2),
    "chunk_gla_bwd_kernel_dA": ({}, 4, 3),
    "chunk_gla_bwd_kernel_dv": ({"BK": 32, "BV": 64}, 8, 3),
    "chunk_gla_bwd_kernel_inter": ({"BK": 32, "BV": 64}, 4, 3),
}


def _keep(configs: list, keep: int, kernel: str = "") -> list:
    """The one configuration in :data:`TUNED` for ``kernel`` (a function name) where it is among
    ``configs`` — nothing left to time, so the choice does not hang on timing noise — else the
    ``keep`` that need the least shared memory and sit nearest 4 warps."""
    if kernel in TUNED:
        kwargs, warps, stages = TUNED[kernel]
        tuned = [c for c in configs if c.num_warps == warps and c.num_stages == stages
                 and all(c.kwargs.get(k) == v for k, v in kwargs.items())]
        if tuned:
            return tuned[:1]

    def cost(c):
        blocks = sorted(v for v in c.kwargs.values() if isinstance(v, int))
        return (c.num_stages, abs(c.num_warps - 4), blocks)

    return sorted(configs, key=cost)[:keep]


@torch.compiler.assume_constant_result
def restrict_autotune(package: str, entry: str, keep: int = 2) -> int:
    """Shrink every loaded autotuned kernel of ``package`` to ``keep`` configurations, once per
    kernel ``entry`` point (call it after importing the entry, so its kernels are loaded).
    Returns how many kernels were restricted; failures only log a warning. Plain Python under
    torch.compile, as :func:`available` (traced, dynamo would follow its cache into the walk
    over ``sys.modules`` in the forward of every SSD call)."""
    return _restrict_autotune(package, entry, keep)


@cache
def _restrict_autotune(package: str, entry: str, keep: int) -> int:
    try:
        count = 0
        for tuner in _autotuners(package):
            if len(tuner.configs) > keep:
                tuner.configs = _keep(list(tuner.configs), keep,
                                      getattr(tuner.base_fn, "__name__", ""))
                count += 1
        return count
    except Exception as err:
        log.warning("could not restrict the autotune space of %s (%s)", package, err)
        return 0


def _kwargs_for(fn, **kwargs) -> dict:
    """The keyword arguments that are set, plus ``head_first=False`` for fla versions that still
    have the argument (newer ones take [B, T, H, ·] only and reject it)."""
    kwargs = {key: value for key, value in kwargs.items() if value is not None}
    if "head_first" in inspect.signature(fn).parameters:
        kwargs["head_first"] = False
    return kwargs


def _varlen(resets: torch.Tensor | None, *tensors: torch.Tensor):
    """For isolated examples: fla's variable-length form, every segment of every row one
    sequence of a single flattened row. Returns (tensors as [1, B·T, ...], cu_seqlens or None)."""
    if resets is None:
        return tensors, None
    starts = resets.clone()
    starts[:, 0] = True
    idx = starts.flatten().nonzero().squeeze(-1)
    cu_seqlens = torch.cat([idx, idx.new_tensor([starts.numel()])])
    return tuple(z.flatten(0, 1)[None] for z in tensors), cu_seqlens


def gla_fla(q, k, v, g, scale: float, autotune: str, resets=None) -> torch.Tensor:
    """fla's chunked GLA. q, k, g: [B, T, H, K]; v: [B, T, H, V]; resets: [B, T] bool or None
    -> o [B, T, H, V]. The gates go in float32 (fla accumulates them in fp32 either way)."""
    from fla.ops.gla import chunk_gla

    if autotune == "restricted":
        restrict_autotune("fla", "chunk_gla")
    (q, k, v, g), cu = _varlen(resets, q, k, v, g.float())
    o, _ = chunk_gla(q=q, k=k, v=v, g=g, **_kwargs_for(chunk_gla, scale=scale, cu_seqlens=cu))
    return o.view(*resets.shape, *o.shape[2:]) if cu is not None else o


def ssd_fla(x, dt, a, bm, cm, autotune: str, resets=None) -> torch.Tensor:
    """SSD as scalar-gated linear attention: q=C, k=B, v=x·dt, g=A·dt, scale 1.
    x: [B, T, H, P]; dt: [B, T, H]; a: [H]; bm, cm: [B, T, N]; resets: [B, T] bool or None
    -> y [B, T, H, P]."""
    from fla.ops.simple_gla import chunk_simple_gla

    if autotune == "restricted":
        restrict_autotune("fla", "chunk_simple_gla")
    h = x.shape[2]
    q = cm[:, :, None].expand(-1, -1, h, -1).to(x.dtype).contiguous()  # [B, T, H, N]
    k = bm[:, :, None].expand(-1, -1, h, -1).to(x.dtype).contiguous()
    v = (x * dt[..., None].to(x.dtype)).contiguous()
    g = dt.float() * a.float()  # [B, T, H]
    (q, k, v, g), cu = _varlen(resets, q, k, v, g)
    y, _ = chunk_simple_gla(q=q, k=k, v=v, g=g,
                            **_kwargs_for(chunk_simple_gla, scale=1.0, cu_seqlens=cu))
    return y.view(*resets.shape, *y.shape[2:]) if cu is not None else y


def ssd_mamba(x, dt, a, bm, cm, chunk: int, autotune: str, resets=None) -> torch.Tensor:
    """mamba_ssm's fused chunked SSD (dt already through softplus, no gate, no D skip);
    isolated examples through its ``seq_idx`` (a non-decreasing segment index per row)."""
    if autotune == "restricted":
        restrict_autotune("mamba_ssm", "mamba_chunk_scan_combined")
    # x, B and C as they come (column slices of the conv's output): its kernels read them at
    # their strides, as the reference Mamba2 module passes them (a copy of x cost 1.3 ms a step)
    bm, cm = (z[:, :, None].to(x.dtype) for z in (bm, cm))  # [B, T, 1, N]
    seq_idx = None if resets is None else resets.int().cumsum(1, dtype=torch.int32).contiguous()
    return mamba_ssd(x, dt.float().contiguous(), a.float(), bm, cm, chunk, seq_idx)


# mamba_ssm's own autograd.Function calls its Triton kernels in a way torch.compile cannot trace
# (5 graph breaks in an 8-layer model, its forward loop left to eager); as two custom ops around
# its forward and backward functions the compiled step keeps one graph (and one CUDA graph).
@torch.library.custom_op("playground::mamba_ssd", mutates_args=())
def mamba_ssd(x: torch.Tensor, dt: torch.Tensor, a: torch.Tensor, bm: torch.Tensor,
              cm: torch.Tensor, chunk: int, seq_idx: torch.Tensor | None) -> torch.Tensor:
    """y [B, T, H, P] of mamba_ssm's chunked SSD: x [B, T, H, P], dt [B, T, H] fp32 (after the
    softplus), a [H] fp32, bm and cm [B, T, G, N], seq_idx [B, T] int32 or None."""
    # imported by available() already (past the package's __init__ where that fails)
    from mamba_ssm.ops.triton.ssd_combined import _mamba_chunk_scan_combined_fwd

    return _mamba_chunk_scan_combined_fwd(x, dt, a, bm, cm, chunk, seq_idx=seq_idx)[0].contiguous()


@mamba_ssd.register_fake
def _(x, dt, a, bm, cm, chunk, seq_idx):
    return x.new_empty(x.shape)


@torch.library.custom_op("playground::mamba_ssd_bwd", mutates_args=())
def mamba_ssd_bwd(dy: torch.Tensor, x: torch.Tensor, dt: torch.Tensor, a: torch.Tensor,
                  bm: torch.Tensor, cm: torch.Tensor, y: torch.Tensor, chunk: int,
                  seq_idx: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                        torch.Tensor, torch.Tensor]:
    """Gradients (dx, ddt, da, dbm, dcm) of :func:`mamba_ssd` from dy and its output y, each
    contiguous in its input's dtype."""
    from mamba_ssm.ops.triton.ssd_combined import _mamba_chunk_scan_combined_bwd

    grads = _mamba_chunk_scan_combined_bwd(dy, x, dt, a, bm, cm, y, chunk, seq_idx=seq_idx)[:5]
    return tuple(g.to(v.dtype).contiguous() for g, v in zip(grads, (x, dt, a, bm, cm)))


@mamba_ssd_bwd.register_fake
def _(dy, x, dt, a, bm, cm, y, chunk, seq_idx):
    return tuple(v.new_empty(v.shape) for v in (x, dt, a, bm, cm))


def _mamba_ssd_setup(ctx, inputs, output) -> None:
    x, dt, a, bm, cm, chunk, seq_idx = inputs
    ctx.save_for_backward(x, dt, a, bm, cm, output, seq_idx)
    ctx.chunk = chunk


def _mamba_ssd_backward(ctx, dy):
    x, dt, a, bm, cm, y, seq_idx = ctx.saved_tensors
    return *mamba_ssd_bwd(dy, x, dt, a, bm, cm, y, ctx.chunk, seq_idx), None, None


mamba_ssd.register_autograd(_mamba_ssd_backward, setup_context=_mamba_ssd_setup)


def gdn_fla(q, k, v, g, beta, scale: float, autotune: str, resets=None) -> torch.Tensor:
    """fla's chunked gated delta rule. q, k: [B, T, H, K], already L2-normalised (so
    ``use_qk_l2norm_in_kernel`` stays off: one normalisation for both paths); v: [B, T, H, V];
    g: [B, T, H] the log decay (natural log, <= 0: fla takes it in log space and does its own
    chunk cumsum); beta: [B, T, H] after the sigmoid; resets: [B, T] bool or None
    -> o [B, T, H, V]. Gates and beta go in float32, as fla's own tests pass them."""
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule

    if autotune == "restricted":
        restrict_autotune("fla", "chunk_gated_delta_rule")
    (q, k, v, g, beta), cu = _varlen(resets, q, k, v, g.float(), beta.float())
    o, _ = chunk_gated_delta_rule(q=q, k=k, v=v, g=g, beta=beta,
                                  **_kwargs_for(chunk_gated_delta_rule, scale=scale, cu_seqlens=cu))
    return o.view(*resets.shape, *o.shape[2:]) if cu is not None else o


def causal_conv1d_canon(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, act: bool,
                        residual: bool) -> torch.Tensor:
    """A static Canon layer through causal-conv1d (CUDA; kernel widths 2–4): x [B, T, C], w [C, K]
    (the last tap on the current token, as ours), y = x + act(conv(x) + bias) or without x. The
    [B, T, C] input is its channel-last layout (``x.transpose(1, 2)``: stride 1 over C), taken
    without a copy; the taps and bias are cast to x's dtype, as the PyTorch reference does."""
    from causal_conv1d import causal_conv1d_fn

    z = causal_conv1d_fn(x.transpose(1, 2), w.to(x.dtype),
                         None if bias is None else bias.to(x.dtype),
                         activation="silu" if act else None).transpose(1, 2)
    return x + z if residual else z


def fla_canon(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, act: bool,
              residual: bool) -> torch.Tensor:
    """A static Canon layer through fla's ``ShortConvolution`` kernel (``causal_conv1d`` of
    ``fla.modules``, its Triton backend): x [B, T, C], w [C, K] (the last tap on the current token,
    as ours), y = x + act(conv(x) + bias) or without x; fla adds the residual inside its kernel.
    The taps and bias are cast to x's dtype, as the PyTorch reference does."""
    from fla.modules.causal_conv1d import causal_conv1d

    y, _ = causal_conv1d(x=x, weight=w.to(x.dtype), bias=None if bias is None else bias.to(x.dtype),
                         residual=x if residual else None, activation="silu" if act else None,
                         backend="triton")
    return y

"""Typed configuration: dataclass schemas registered in Hydra's ConfigStore.

Every YAML file under ``conf/`` extends one of these schemas, so an unknown key or a value of the
wrong type fails while Hydra composes the config, naming the key. Values that are well-typed but
impossible (e.g. ``model.canon.positions=AX``) fail in the dataclasses' ``__post_init__`` when the
config is turned into objects by :func:`to_objects`, again naming the key.

Tasks and mixers are plug-ins: the entry-point groups ``playground.tasks`` and
``playground.mixers`` name their classes (ours in ``pyproject.toml``, a researcher's in their
own package), and :func:`plugins` reads them. So this module, at the bottom of the package,
knows every task and mixer without importing one (docs/architecture.md).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from playground.errors import ConfigError, check, collecting


def shipped(name: str) -> Path:
    """A folder shipped with the package (``conf``, ``sweeps``): inside it when installed from a
    wheel, else the top-level source folder of the checkout (editable installs, tests)."""
    here = Path(__file__).resolve().parent
    return here / name if (here / name).is_dir() else here.parent / name


CONF_DIR = shipped("conf")
PAPER_SIZES = ("8L512D", "8L768D", "12L512D", "12L768D")  # presets conf/size/<label>.yaml
SCHEDULES = ("cosine", "linear", "constant")
DTYPES = ("auto", "float32", "bfloat16")
RESUME = ("auto", "never")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune",
                 "max-autotune-no-cudagraphs")  # torch.compile's
CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")  # the modes that capture CUDA graphs
GRAD_SYNCS = ("ddp", "flat")
MLPS = ("swiglu", "gelu", "moe", "none")
# data.packing (data/packing.py); auto = the task's own
PACKINGS = ("auto", "aligned", "aligned_drop", "stream")


@functools.cache
def plugins(group: str, base: type = object) -> dict[str, type]:
    """The classes registered under the entry-point group ``group`` (``playground.tasks``,
    ``playground.mixers``), by entry-point name. Each is a subclass of ``base`` whose ``Config``
    (its config dataclass) has that ``name``; a name bound to two classes is an error."""
    from importlib.metadata import entry_points

    found: dict[str, type] = {}
    for ep in sorted(entry_points(group=group), key=lambda e: (e.name, e.value)):
        cls = ep.load()
        if found.setdefault(ep.name, cls) is not cls:
            raise RuntimeError(f"{group}: {ep.name!r} names both {found[ep.name]} and {cls}")
        if not (isinstance(cls, type) and issubclass(cls, base)) or \
                getattr(getattr(cls, "Config", None), "name", None) != ep.name:
            raise RuntimeError(f"entry point {group}:{ep.name} = {ep.value} must be a "
                               f"{base.__name__} subclass whose Config.name is {ep.name!r}")
    if not found:
        raise RuntimeError(f"no {group} are registered: install the package (pip install -e .) "
                           "so that its entry points exist")
    return found


def plugin(group: str, name: str, key: str) -> type:
    """The class registered as ``name`` in ``group`` or, for a dotted path, imported from it
    (:func:`import_plugin`); else a ConfigError naming ``key``."""
    known = plugins(group)
    if name not in known and is_path(name):
        return import_plugin(name, key)
    check(name in known, key, name, f"one of {sorted(known)} (entry points of {group})")
    return known[name]


PATH_RE = re.compile(r"[A-Za-z_][\w.]*[.:][A-Za-z_]\w*")  # my_pkg.my_mixer:MyMixer or .MyMixer


def is_path(name: str) -> bool:
    """Whether a task or mixer name is a dotted path to its class rather than an entry-point
    name (which holds neither ``.`` nor ``:``)."""
    return bool(PATH_RE.fullmatch(str(name)))


@functools.cache
def import_plugin(path: str, key: str) -> type:
    """The class at ``path`` (``module:Class`` or ``module.Class``), imported from the working
    directory or anywhere on ``sys.path``: a task or mixer used without an entry point, so with
    no reinstall. It is a class with a dataclass ``Config``; a run's config names it by the path
    (its ``name``), so resuming and evaluating import it again. ConfigError naming ``key``."""
    import importlib
    import os
    import sys

    module_name, _, attr = path.partition(":") if ":" in path else path.rpartition(".")
    if os.getcwd() not in sys.path and "" not in sys.path:  # console scripts leave it out
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"{key}={path!r} is invalid: module {module_name!r} does not import "
                          f"({err}); expected module:Class importable from the working directory "
                          "or PYTHONPATH") from None
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(getattr(cls, "Config", None))):
        raise ConfigError(f"{key}={path!r} is invalid: expected a class with a dataclass Config in "
                          f"module {module_name!r} (docs/adding_a_task.md)")
    return cls


# -- Canon ---------------------------------------------------------------------------------

POINTS = "ABCD"
EXTRA_POINTS = "OE"  # after the mixer's output / the MLP's down projection (after_every_linear)
DYNAMIC = ("none", "lowrank", "headwise")
ACTIVATIONS = ("none", "silu")
INITS = ("default", "zero", "past_average", "random_fixed")
BACKENDS = ("auto", "torch", "triton", "fused", "causal_conv1d", "fla")


@dataclass
class CanonConfig:
    """Canon layers of every backbone: the one place where they are chosen (layers/canon.py)."""

    positions: str = ""  # any subset of "ABCD", e.g. "", "AC", "ABCD"
    kernel: int = 4
    residual: bool = True
    activation: str = "none"  # none | silu
    bias: bool = False
    # default (PyTorch conv init) | zero (identity at step 0 with residual) | past_average
    # (current token 0, each of the K-1 previous 1/(K-1)) | random_fixed (default init, frozen:
    # the paper's "Canon(cst)")
    init: str = "default"
    # the default init's bound × this: taps U(-s/sqrt(K), s/sqrt(K)) (default and random_fixed)
    init_scale: float = 1.0
    # added to the current token's tap after the init (any init): with no activation, nores + 1
    # starts as res, res - 1 as nores
    init_current: float = 0.0
    # auto: the Triton Canon kernel on CUDA when available (Canon-B fused into the q/k/v split and
    # RoPE where RoPE turns whole heads), else torch | torch | triton (required; the plain kernel,
    # no fusion) | fused: every fusion, also Canon-D into SwiGLU (CUDA; the least memory) |
    # causal_conv1d: the package of the paper's code (CUDA; static, kernel 2-4; optional) |
    # fla: fla's ShortConvolution kernel (CUDA, the gpu extra; static), for comparison
    backend: str = "auto"
    dynamic: str = "none"  # none | lowrank | headwise: input-dependent filters
    rank: int = 8  # lowrank: rank R of the filter generator
    group: int = 64  # headwise: channels sharing one filter
    after_every_linear: bool = False  # also after the mixer's output and the MLP's down projection

    def __post_init__(self) -> None:
        p = self.positions
        check(set(p) <= set(POINTS) and len(set(p)) == len(p), "model.canon.positions", p,
              'distinct letters from "ABCD" (e.g. "", "AC", "ABCD")')
        check(1 <= self.kernel <= 8, "model.canon.kernel", self.kernel, "an integer in 1..8")
        check(self.activation in ACTIVATIONS, "model.canon.activation", self.activation,
              f"one of {ACTIVATIONS}")
        check(self.init in INITS, "model.canon.init", self.init, f"one of {INITS}")
        check(math.isfinite(self.init_scale) and self.init_scale > 0, "model.canon.init_scale",
              self.init_scale, "a finite number > 0")
        check(self.init_scale == 1.0 or self.init in ("default", "random_fixed"),
              "model.canon.init_scale", self.init_scale,
              f"1 with model.canon.init={self.init} (it scales the default init's taps)")
        check(isinstance(self.init_current, (int, float)) and math.isfinite(self.init_current),
              "model.canon.init_current", self.init_current, "a finite number")
        check(self.backend in BACKENDS, "model.canon.backend", self.backend, f"one of {BACKENDS}")
        if self.backend == "causal_conv1d":
            check(2 <= self.kernel <= 4, "model.canon.kernel", self.kernel,
                  "2, 3 or 4 with model.canon.backend=causal_conv1d (the widths it is built for)")
        if self.backend in ("causal_conv1d", "fla"):  # another project's kernel
            check(self.dynamic == "none", "model.canon.dynamic", self.dynamic,
                  f"none with model.canon.backend={self.backend} (its filters are static)")
        check(self.dynamic in DYNAMIC, "model.canon.dynamic", self.dynamic, f"one of {DYNAMIC}")
        check(self.rank >= 1, "model.canon.rank", self.rank, "an integer >= 1")
        check(self.group >= 1, "model.canon.group", self.group, "an integer >= 1")

    def tag(self) -> str:
        """Short label for run names, e.g. ``ABCD``, ``AC-nores-silu``, ``none`` (also called on
        a raw config, hence the plain function below)."""
        if not self.positions:
            return "none"
        return "-".join(["".join(sorted(self.positions)), *canon_details(self)])


def canon_details(c) -> list[str]:
    """What differs in Canon config ``c`` from a plain residual Canon layer, e.g.
    ``["nores", "silu"]`` (run names and the report's Canon ids)."""
    parts = [] if c.residual else ["nores"]
    parts += [] if c.activation == "none" else [c.activation]
    parts += [] if c.kernel == 4 else [f"k{c.kernel}"]
    parts += ["bias"] if c.bias else []
    parts += [] if c.init == "default" else [f"init{c.init}"]
    parts += [] if getattr(c, "init_scale", 1.0) == 1.0 else [f"initx{c.init_scale:g}"]
    parts += [] if getattr(c, "init_current", 0.0) == 0 else [f"initc{c.init_current:+g}"]
    parts += [] if c.dynamic == "none" else [f"dyn{c.dynamic}"]
    parts += ["alllinear"] if c.after_every_linear else []
    return parts


# -- the run ---------------------------------------------------------------------------------


@dataclass
class ModelConfig:
    size: str = "2L64D"  # label of the size preset, e.g. 12L768D
    n_layers: int = 2
    depth_multiplier: int = 1  # blocks = n_layers × this (pure Mamba2 uses 2 to match Llama sizes)
    d_model: int = 64
    head_dim: int = 64
    mlp: str = "swiglu"  # swiglu | gelu | moe | none
    moe_experts: int = 32  # with mlp=moe: SwiGLU experts, top-1 routing
    moe_aux_weight: float = 0.01  # weight of the load-balancing loss
    tie_embeddings: bool = False
    init_std: float = 0.02
    norm_eps: float = 1e-5
    mixer: Any = MISSING  # the Config of a mixer registered in playground.mixers
    canon: CanonConfig = field(default_factory=CanonConfig)

    def __post_init__(self) -> None:
        check(self.n_layers >= 1, "model.n_layers", self.n_layers, "an integer >= 1")
        check(self.depth_multiplier >= 1, "model.depth_multiplier", self.depth_multiplier,
              "an integer >= 1")
        check(self.head_dim >= 2 and self.head_dim % 2 == 0, "model.head_dim", self.head_dim,
              "an even integer >= 2")
        check(self.d_model >= 1 and self.d_model % self.head_dim == 0, "model.d_model",
              self.d_model, f"a positive multiple of model.head_dim={self.head_dim}")
        check(self.mlp in MLPS, "model.mlp", self.mlp, f"one of {MLPS}")
        check(self.init_std > 0, "model.init_std", self.init_std, "a number > 0")
        check(self.moe_experts >= 1, "model.moe_experts", self.moe_experts, "an integer >= 1")
        check(self.moe_aux_weight >= 0, "model.moe_aux_weight", self.moe_aux_weight,
              "a number >= 0")
        if self.mlp == "moe":
            check("D" not in self.canon.positions, "model.canon.positions", self.canon.positions,
                  "no D with model.mlp=moe (Canon-D has no single place among experts; "
                  "A, B, C are fine)")
        if "C" in self.canon.positions or "D" in self.canon.positions:
            check(self.mlp != "none", "model.canon.positions", self.canon.positions,
                  "no C or D when model.mlp=none (there is no MLP to place them in)")
        if not self.canon.positions:  # no Canon layer: its settings would go unused, unsaid
            for f in dataclasses.fields(CanonConfig):
                value = getattr(self.canon, f.name)
                check(f.name == "positions" or value == f.default, f"model.canon.{f.name}", value,
                      f"its default {f.default!r} without Canon layers (model.canon.positions is "
                      "empty, as with canon=none): it would have no effect")


@dataclass
class TrainConfig:
    steps: int = 300  # optimizer updates; 0 = the task's own count (e.g. Capo's exposures)
    batch_size: int = 32  # windows per optimizer step (global, over devices and accumulation)
    micro_batch_size: int = 0  # windows per forward pass; 0 = batch_size (no accumulation)
    lr: float = 3e-3
    schedule: str = "cosine"  # cosine | linear | constant (after warmup)
    min_lr_ratio: float = 0.1  # final lr / peak lr (cosine-to-10% by default; 0 for linear-to-0)
    warmup_steps: int = 0
    weight_decay: float = 0.03
    beta1: float = 0.9
    beta2: float = 0.98
    eps: float = 1e-6
    grad_clip: float = 1.0  # max global grad norm; 0 disables clipping
    # a non-finite loss/gradient step is skipped, then: stop (diverged) | skip
    on_nonfinite: str = "stop"
    max_skipped: int = 100  # with on_nonfinite=skip: more skipped steps than this = diverged
    log_every: int = 10
    eval_every: int = 100  # steps between evaluations (and always at the end); 0 = only at the end
    eval_batch_size: int = 256  # eval batches; large ones amortise per-token decoding overhead
    # generation evals decode in fixed-shape steps, on CUDA replayed as one CUDA graph per batch
    # (playground.model.generate(graph=True)): no host-bound decoding; bf16 may round a sample's
    # near-tie differently from the default path
    eval_graphs: bool = False
    # write the last evaluation's per-question records (Lano: each generated sample, its length
    # and the recognizer's verdict) to the run directory's eval_samples.jsonl
    save_samples: bool = False
    ckpt_every: int = 100  # steps between checkpoints (and always at the end)
    keep_checkpoints: int = 2
    resume: str = "auto"  # auto: continue from the latest checkpoint | never: start afresh
    compile: bool = False
    # with compile: model (one graph: inductor fuses across blocks) | blocks (each block compiled
    # alone; identical blocks share one graph, so compiling takes a fraction of the time)
    compile_scope: str = "model"
    # with compile: torch.compile's mode (default | reduce-overhead: CUDA graphs | max-autotune:
    # inductor benchmarks its kernel choices, with CUDA graphs | max-autotune-no-cudagraphs)
    compile_mode: str = "default"
    # data parallel with compile: false = one graph, the gradients' all-reduce after the whole
    # backward | true = one graph per DDP bucket (Dynamo's optimize_ddp), each bucket's all-reduce
    # overlapping the rest of the backward
    ddp_bucket_graphs: bool = False
    # data parallel: how the ranks sum their gradients. ddp = PyTorch's DistributedDataParallel
    # (per-parameter hooks fill buckets, each all-reduced as it fills, overlapping the eager
    # backward) | flat = after the whole backward, every gradient into one buffer and one
    # all-reduce (no hooks: fewer host operations a step, where a compiled backward ends all
    # at once anyway)
    grad_sync: str = "ddp"
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    dtype: str = "auto"  # auto = bfloat16 autocast on CUDA, float32 elsewhere
    progress: bool = True
    # CUDA: deterministic kernels only, for bitwise-repeatable runs (slower)
    deterministic: bool = False
    # after the last step, the final model at these multiples of the training context, each task
    # longer in its own way (RUN/length_gen.csv, as playground-eval RUN eval.length_scales=…)
    length_scales: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        check(self.steps >= 0, "train.steps", self.steps, "an integer >= 0 (0 = set by the task)")
        positive = ("batch_size", "log_every", "eval_batch_size", "ckpt_every",
                    "keep_checkpoints")
        for key in positive:
            check(getattr(self, key) >= 1, f"train.{key}", getattr(self, key), "an integer >= 1")
        mb = self.micro_batch_size
        check(mb >= 0 and (mb == 0 or self.batch_size % mb == 0), "train.micro_batch_size", mb,
              f"0 or a divisor of train.batch_size={self.batch_size}")
        check(self.lr > 0, "train.lr", self.lr, "a number > 0")
        check(self.schedule in SCHEDULES, "train.schedule", self.schedule, f"one of {SCHEDULES}")
        check(0 <= self.min_lr_ratio <= 1, "train.min_lr_ratio", self.min_lr_ratio,
              "a number in [0, 1]")
        check(0 <= self.warmup_steps and (self.steps == 0 or self.warmup_steps <= self.steps),
              "train.warmup_steps", self.warmup_steps,
              f"an integer in [0, train.steps={self.steps}]")
        check(self.eval_every >= 0, "train.eval_every", self.eval_every, "an integer >= 0")
        check(all(scale > 0 for scale in self.length_scales), "train.length_scales",
              list(self.length_scales), "numbers > 0, e.g. [1,2,4]")
        check(self.dtype in DTYPES, "train.dtype", self.dtype, f"one of {DTYPES}")
        check(self.compile_scope in ("model", "blocks"), "train.compile_scope", self.compile_scope,
              "model or blocks")
        check(self.compile or self.compile_scope == "model", "train.compile_scope",
              self.compile_scope,
              "model (the default) unless train.compile=true: it chooses what is compiled")
        check(self.compile_mode in COMPILE_MODES, "train.compile_mode", self.compile_mode,
              f"one of {COMPILE_MODES}")
        check(self.compile or self.compile_mode == "default", "train.compile_mode",
              self.compile_mode,
              "default unless train.compile=true: it chooses how the model is compiled")
        # blocks share one compiled graph; under CUDA graphs each block's call overwrites the
        # output buffers the next block reads (PyTorch raises "accessing tensor output of
        # CUDAGraphs that has been overwritten" at the first step)
        check(self.compile_scope == "model" or self.compile_mode not in CUDAGRAPH_MODES,
              "train.compile_mode", self.compile_mode,
              f"not one of {CUDAGRAPH_MODES} with train.compile_scope=blocks (CUDA graphs need "
              "the whole model as one graph: compile_scope=model)")
        check(self.compile or not self.ddp_bucket_graphs, "train.ddp_bucket_graphs",
              self.ddp_bucket_graphs,
              "false unless train.compile=true: it chooses how the compiled model is split")
        check(self.grad_sync in GRAD_SYNCS, "train.grad_sync", self.grad_sync,
              f"one of {GRAD_SYNCS}")
        check(self.grad_sync == "ddp" or not self.ddp_bucket_graphs, "train.ddp_bucket_graphs",
              self.ddp_bucket_graphs, "false unless train.grad_sync=ddp: it splits DDP's graph")
        check(self.on_nonfinite in ("stop", "skip"), "train.on_nonfinite", self.on_nonfinite,
              "stop or skip")
        check(self.max_skipped >= 0, "train.max_skipped", self.max_skipped, "an integer >= 0")
        check(self.grad_clip >= 0, "train.grad_clip", self.grad_clip, "a number >= 0 (0 = off)")
        check(self.resume in RESUME, "train.resume", self.resume, f"one of {RESUME}")
        check(self.device == "auto" or self.device.split(":")[0] in ("cpu", "cuda"), "train.device",
              self.device, "auto, cpu, cuda or cuda:N")


@dataclass
class DataConfig:
    # examples packed together (0: ~262k tokens' worth); part of the data's identity
    shard_examples: int = 0
    # loader processes (never change the data); -1 = auto (run/device.py: loader_workers)
    num_workers: int = -1
    prefetch: int = 4  # shards each worker prepares ahead
    # seconds the training waits for its next shard (from a loader worker, or from another rank
    # in the data-parallel swap) before it fails instead of hanging; 0 = forever
    stall_s: float = 600.0
    isolate_examples: bool = False  # packed examples cannot see each other (attention, Canon, RoPE)
    # how examples fill windows: aligned (a window starts at an example) | aligned_drop (aligned,
    # the rare example longer than task.context left out) | stream (examples concatenated and
    # cut, crossing window edges) | auto (the task's own); part of the data's identity
    packing: str = "auto"

    def __post_init__(self) -> None:
        check(self.packing in PACKINGS, "data.packing", self.packing, f"one of {PACKINGS}")
        check(self.shard_examples >= 0, "data.shard_examples", self.shard_examples,
              "an integer >= 0 (0 = automatic)")
        check(self.num_workers >= -1, "data.num_workers", self.num_workers,
              "an integer >= 0, or -1 (auto)")
        check(self.prefetch >= 1, "data.prefetch", self.prefetch, "an integer >= 1")
        check(self.stall_s >= 0, "data.stall_s", self.stall_s, "a number >= 0 (0 = wait forever)")


WANDB_MODES = ("offline", "online", "disabled")
# WANDB_MODE values wandb itself accepts, and the mode each means (dryrun and run are its old names)
WANDB_ENV_MODES = {"offline": "offline", "online": "online", "disabled": "disabled",
                   "shared": "shared", "dryrun": "offline", "run": "online"}


@dataclass
class WandbConfig:
    # "" (unset): the environment decides (resolved_mode); offline | online | disabled: this wins.
    # A mirror only; reports never read it, and the key is volatile (not part of a run's identity).
    mode: str = ""
    project: str = "canon-playground"

    def __post_init__(self) -> None:
        check(self.mode in ("", *WANDB_MODES), "wandb.mode", self.mode,
              f"one of {WANDB_MODES}, or '' (unset: WANDB_MODE / WANDB_DISABLED decide, "
              "else offline)")

    def resolved_mode(self, environ: dict[str, str] | None = None) -> str:
        """The mode the wandb mirror runs in (the one place it is decided): an explicit
        ``wandb.mode``; else ``WANDB_MODE`` from the environment; else ``disabled`` when
        ``WANDB_DISABLED`` is true, 1 or yes; else ``offline``.
        ``environ`` defaults to os.environ."""
        if self.mode:
            return self.mode
        if environ is None:
            import os

            environ = os.environ
        if env_mode := environ.get("WANDB_MODE", "").strip().lower():
            if env_mode not in WANDB_ENV_MODES:
                raise ConfigError(f"WANDB_MODE={environ['WANDB_MODE']!r} (environment) is invalid: "
                                  f"expected one of {tuple(WANDB_ENV_MODES)}, or set wandb.mode")
            return WANDB_ENV_MODES[env_mode]
        if environ.get("WANDB_DISABLED", "").strip().lower() in ("true", "1", "yes"):
            return "disabled"
        return "offline"


@dataclass
class Config:
    task: Any = MISSING  # the Config of a task registered in playground.tasks
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    data: DataConfig = field(default_factory=DataConfig)
    wandb: WandbConfig = field(default_factory=WandbConfig)
    seed: int = 0  # model initialisation seed (the data seed is task.seed)
    sweep: str = "default"  # runs go to results/<sweep>/<run_name>
    panel: str = ""  # the heatmap this run is a cell of (set by sweeps; default: the task's)
    variant: str = ""  # the sweep's name for this run's architecture (e.g. llama_rope_canon)
    run_name: str = "${pg_run_name:}"
    out_dir: str = "results/${sweep}/${run_name}"

    def __post_init__(self) -> None:
        check_names(self.sweep, self.run_name, self.out_dir)


def check_names(sweep: str, run_name: str, out_dir: str) -> None:
    """``sweep`` and ``run_name`` each name a folder below ``results/`` (``out_dir`` defaults to
    ``results/<sweep>/<run_name>``): non-empty, no part empty, ``.`` or ``..`` (``sweep=`` would put
    the run into the sweep's folder itself, ``run_name=..`` above it); ``out_dir`` is non-empty."""
    for key, value in (("sweep", sweep), ("run_name", run_name)):
        parts = str(value).split("/")
        check(all(part.strip() not in ("", ".", "..") for part in parts), key, value,
              "a folder name (not empty, no '.' or '..' part): the run goes to "
              "results/<sweep>/<run_name>")
    check(bool(str(out_dir).strip()), "out_dir", out_dir, "the run's directory (not empty)")


def uses_bf16(device: torch.device, dtype: str = "auto") -> bool:
    """Whether ``train.dtype`` means bf16 autocast on ``device``: ``bfloat16``, or ``auto`` on
    CUDA."""
    return dtype == "bfloat16" or (dtype == "auto" and device.type == "cuda")


def autocast_for(device: torch.device, dtype: str = "auto"):
    """The precision of ``train.dtype`` (:func:`uses_bf16`): bf16 autocast, otherwise a no-op."""
    enabled = uses_bf16(device, dtype)
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


# -- composing and checking -------------------------------------------------------------------


def _label(value) -> str:
    """A config value as a path-safe label: lists join with '-' (``[8, 16]`` -> ``8-16``), a
    file path becomes its stem (``grammars/small4.json`` -> ``small4``)."""
    if isinstance(value, (list, tuple)) or OmegaConf.is_list(value):
        return "-".join(str(v) for v in value)
    text = str(value)
    return Path(text).stem if "/" in text or text.endswith(".json") else text


def run_name(cfg: DictConfig) -> str:
    """A descriptive name that spells out the paper's axes, e.g.
    ``depo1_N225_K8_12L768D_rope_canon-ABCD_lr0.001_s0``. Tags are read from the raw config
    (no checks here: a bad value is reported by :func:`to_objects` with its key)."""
    task_cls = plugin("playground.tasks", cfg.task.name, "task.name")
    difficulty = "_".join(f"{k}{_label(cfg.task[k])}" for k in task_cls.Config.difficulty_keys)
    mixer = plugin("playground.mixers", cfg.model.mixer.name,
                   "model.mixer.name").Config.tag(cfg.model.mixer)
    canon = CanonConfig.tag(cfg.model.canon)
    body = "" if cfg.model.mlp == "swiglu" else f"mlp{cfg.model.mlp}"
    parts = [cfg.task.preset, difficulty, cfg.model.size.replace("/", "-"), body, mixer,
             f"canon-{canon}", f"lr{cfg.train.lr:g}", f"s{cfg.seed}"]
    return "_".join(p for p in parts if p)


# (config group, entry-point group, package of its node) of the plug-in kinds
PLUGIN_GROUPS = (("task", "playground.tasks", "task"),
                 ("mixer", "playground.mixers", "model.mixer"))


def register() -> None:
    """Register the schemas (idempotent) and the ``pg_run_name`` resolver. A task or mixer
    without a preset file of its name under ``conf/`` gets its Config's defaults as the preset
    (``task=<name>`` works for a plug-in with no YAML at all)."""
    if not OmegaConf.has_resolver("pg_run_name"):
        OmegaConf.register_new_resolver("pg_run_name", lambda *, _root_: run_name(_root_))
    cs = ConfigStore.instance()
    # storing takes ~0.1 s, once per compose otherwise: skip it while the store still holds what
    # the same plug-ins (plugins() is cached) put there
    key = tuple((kind, *plugins(kind).items()) for _, kind, _ in PLUGIN_GROUPS)
    if cs.repo.get("base_config.yaml") is not None and _REGISTERED.get("plugins") == key:
        return
    cs.store(name="base_config", node=Config)
    for group, kind, package in PLUGIN_GROUPS:
        for name, cls in plugins(kind).items():
            cs.store(group=group, name=f"{name}_schema", node=cls.Config, package=package)
            if not (CONF_DIR / group / f"{name}.yaml").exists():
                cs.store(group=group, name=name, node=cls.Config, package=package)
    cs.store(group="canon", name="canon_schema", node=CanonConfig, package="model.canon")
    cs.store(group="train", name="train_schema", node=TrainConfig, package="train")
    _REGISTERED["plugins"] = key


_REGISTERED: dict[str, tuple] = {}  # what register() last stored (a cache, not a setting)


def to_objects(cfg: DictConfig) -> Config:
    """Resolve a composed config into dataclass objects, running every value check and the
    cross-field checks of :func:`check_combinations`; all problems are reported together."""
    with collecting() as problems:
        try:
            obj = OmegaConf.to_object(cfg)
        except Exception as err:  # OmegaConf wraps errors raised inside __post_init__
            cause = err.__cause__ or err.__context__
            if isinstance(cause, ConfigError):
                raise cause from None
            if problems:  # a follow-on failure of values already reported
                return None  # type: ignore[return-value]  (collecting() raises on exit)
            raise
        check_unknown_keys(OmegaConf.to_container(cfg, resolve=False), obj)
        check_combinations(obj)
    return obj


def check_unknown_keys(data: dict, obj: Config) -> None:
    """Refuse keys that no schema has (``+train.step=50`` adds one that Hydra's struct mode lets
    through), each with the nearest key the schema does have."""
    known = _schema_keys(obj)
    for key in _unknown_keys(data, obj):
        near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        raise ConfigError(f"{key} is not a config key" + (f"; did you mean {near[0]}?" if near else
                                                           " (see playground-train --cfg job)"))


def _unknown_keys(node, obj, prefix: str = "") -> list[str]:
    if not (dataclasses.is_dataclass(obj) and isinstance(node, dict)):
        return []
    names = {f.name for f in dataclasses.fields(obj)}
    out = []
    for key, value in node.items():
        out += ([prefix + key] if key not in names
                else _unknown_keys(value, getattr(obj, key), f"{prefix}{key}."))
    return out


def _schema_keys(obj, prefix: str = "") -> list[str]:
    if not dataclasses.is_dataclass(obj):
        return []
    return [k for f in dataclasses.fields(obj)
            for k in [prefix + f.name, *_schema_keys(getattr(obj, f.name), f"{prefix}{f.name}.")]]


def check_combinations(cfg: Config) -> None:
    """Checks that need more than one section of the config (the fit of examples into
    ``task.context`` needs the task built: ``data.packing.check_fits``)."""
    check(not cfg.data.isolate_examples or cfg.model.mixer.name == "attention",
          "data.isolate_examples", True, f"false with model.mixer.name={cfg.model.mixer.name!r} "
          "(only attention separates packed examples so far)")


def compose(overrides: list[str], config_name: str = "config") -> DictConfig:
    """Compose ``conf/<config_name>.yaml`` with Hydra overrides, outside of a Hydra app."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException

    register()
    check_removed_keys(overrides)
    overrides = plugin_overrides(overrides)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        try:
            return hydra_compose(config_name=config_name, overrides=overrides)
        except HydraException as err:
            if missing := _missing_option(str(err)):
                raise ConfigError(missing) from None
            detail = f" ({err.__cause__})".replace("\n", " ") if err.__cause__ else ""
            raise ConfigError(f"{err}{detail}".replace("\n", " ")) from None


class Composer:
    """:func:`compose` for the many runs of a sweep: runs whose overrides differ only in plain
    values (``seed=1``, ``task.N=15``, ``train.lr=1e-3``: keys that name no config group) share
    one composition of the rest, and each run gets a copy with its values set as Hydra sets them
    (after the defaults are composed, in their order, struct mode on). A copy with its values
    takes ~2 ms where composing takes ~0.2-0.3 s. A run that fails this way is composed whole,
    so that its error is Hydra's own."""

    def __init__(self):
        self._shared: dict[tuple[str, ...], DictConfig] = {}

    def __call__(self, overrides: list[str]) -> DictConfig:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        register()
        check_removed_keys(overrides)
        overrides = plugin_overrides(overrides)
        try:
            values, rest = [], []
            for override in OverridesParser.create().parse_overrides(overrides):
                (values if _plain_value(override) else rest).append(override)
            rest = tuple(o.input_line for o in rest)
            if rest not in self._shared:
                self._shared[rest] = compose(list(rest))
            cfg = copy.deepcopy(self._shared[rest])
            for value in values:  # as Hydra sets a value on the composed config, struct mode on
                OmegaConf.update(cfg, value.key_or_group, value.value(), merge=True)
            return cfg
        except Exception:  # noqa: BLE001 (composed whole: Hydra's result or its own error)
            return compose(overrides)


def _plain_value(override) -> bool:
    """Whether a parsed Hydra override is a plain value (``key=value``: no ``+``/``~``, no
    package, no sweep, its key neither a config group of conf/ or the ConfigStore nor Hydra's
    own ``hydra…``): Hydra sets these on the config composed from the others."""
    from hydra.core.override_parser.types import OverrideType

    key = override.key_or_group
    if (override.type is not OverrideType.CHANGE or override.package is not None
            or override.is_sweep_override() or key.startswith("hydra")):
        return False
    node = ConfigStore.instance().repo
    for part in key.split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    return not (isinstance(node, dict) or (CONF_DIR / key).is_dir())


def plugin_overrides(args: list[str]) -> list[str]:
    """Overrides with each task or mixer named by a dotted path (:func:`is_path`) made a group
    option: the class's Config, its defaults, is stored as the option of that name, and
    ``task.name=P`` / ``model.mixer.name=P`` become ``task=P`` / ``mixer=P`` (the group's preset
    would otherwise hold another class's fields). ``task=P`` and sweeps (``P,Q``) work too."""
    out = []
    for arg in args:
        key, sep, value = arg.partition("=")
        values = value.split(",") if sep else []
        for group, kind, package in PLUGIN_GROUPS:
            if key not in (group, f"{package}.name"):
                continue
            for path in filter(is_path, values):
                node = OmegaConf.structured(plugin(kind, path, f"{package}.name").Config)
                node.name = path
                ConfigStore.instance().store(group=group, name=path, node=node, package=package)
            if key != group and values and all(map(is_path, values)):
                arg = f"{group}={value}"
        out.append(arg)
    return out


def check_group_options(args: list[str]) -> None:
    """Refuse a command-line ``group=option`` naming no option of a config group
    (``task=depo_tny``), with the nearest option, before Hydra composes anything (its own message
    lists every option over many lines). Sweeps (``a,b``) and interpolations are left to Hydra, and
    so are Hydra's own groups (``hydra/launcher=joblib``:
    its plug-ins add options that conf/ does not hold)."""
    register()
    store = ConfigStore.instance().repo
    for arg in args:
        group, sep, name = arg.lstrip("+~").partition("=")
        folder = CONF_DIR / group
        if (not sep or not folder.is_dir() or not name or group.startswith("hydra/")
                or any(c in name for c in ",${}[]()")):
            continue
        # options in sub-folders too: size=mqar/w64
        options = sorted({p.relative_to(folder).with_suffix("").as_posix()
                          for p in folder.rglob("*.yaml")}
                         | {n.removesuffix(".yaml") for n in store.get(group, {})})
        if name not in options:
            message = _missing_option(f"Could not find '{group}/{name}'\n\n"
                                      f"Available options in '{group}':\n"
                                      + "\n".join(f"\t{o}" for o in options))
            raise ConfigError(message)


def _missing_option(message: str) -> str | None:
    """Hydra's "Could not find 'group/name'" (and its list of every option) as one line with the
    nearest option."""
    found = re.search(r"Could not find '([^'/]+)/([^']+)'.*?Available options in '[^']+':\n"
                      r"(.*?)(?:\n\S|$)",
                      message, re.S)
    if not found:
        return None
    group, name, listing = found.groups()
    options = [o.strip() for o in listing.splitlines()
               if o.strip() and not o.strip().endswith("_schema")]
    near = difflib.get_close_matches(name, options, n=1, cutoff=0.5)
    return (f"{group}={name} is not an option of {group}"
            + (f"; did you mean {group}={near[0]}?" if near else "")
            + f" (options: {', '.join(options)})")


# config keys that were removed: key -> (the value a stored config may hold, which changed
# nothing and is dropped on loading; why the key went)
REMOVED = {
    "model.mixer.norm_backend": (
        "torch", "the option was removed (Mamba2's gated RMSNorm is the PyTorch one only; "
        "norm_backend=triton, a Triton kernel of it, computed the same model)"),
}


def check_removed_keys(overrides: list[str]) -> None:
    """Refuse an override of a removed key (:data:`REMOVED`), naming it and why it went."""
    for arg in overrides:
        key, _, value = arg.lstrip("+~").partition("=")
        if key in REMOVED:
            raise ConfigError(f"{key}={value} is invalid: {REMOVED[key][1]}; drop the override")


# keys added to the schema since runs were stored -> the value that computes what runs without
# the key computed
ADDED = {"model.canon.init_scale": 1.0, "model.canon.init_current": 0.0}


def upgrade(data: dict) -> dict:
    """A resolved config with legacy keys (no ``data.packing``; Mamba2's ``variant``; a removed
    key, :data:`REMOVED`; without a key of :data:`ADDED`), in the current schema."""
    return _add_new(_upgrade_packing(_upgrade_mamba_variant(_drop_removed(data))))


def _add_new(data: dict) -> dict:
    """A stored config with each key of :data:`ADDED` that it lacks, at its inert value (where
    the key's section is there: a config without a model says nothing of its Canon)."""
    for key, inert in ADDED.items():
        node, name = _section(data, key)
        if node is not None and name not in node:
            data = copy.deepcopy(data)
            _section(data, key)[0][name] = inert
    return data


def _drop_removed(data: dict) -> dict:
    """A stored config without the keys of :data:`REMOVED`: one holding the value that changed
    nothing is dropped, any other value refused, naming the key."""
    for key, (inert, why) in REMOVED.items():
        node, name = _section(data, key)
        if node is None or name not in node:
            continue
        if node[name] != inert:
            raise ConfigError(f"{key}={node[name]!r} in a stored config is invalid: {why}; "
                              "delete the key from the run's config.yaml to load it")
        data = copy.deepcopy(data)
        _section(data, key)[0].pop(name)
    return data


def _section(data: dict, key: str) -> tuple[dict | None, str]:
    """The dict of ``data`` that holds dotted ``key`` (None where a section on its path is
    missing) and the key's last name."""
    *parents, name = key.split(".")
    node = functools.reduce(lambda d, k: d.get(k) if isinstance(d, dict) else None, parents, data)
    return (node if isinstance(node, dict) else None), name


def _upgrade_packing(data: dict) -> dict:
    """A config without ``data.packing`` was trained on aligned windows. It says ``auto`` where
    the task's own packing is aligned (the same stream, so the run can resume under the default),
    else ``aligned`` (what it trained on, e.g. Lano, whose own packing is ``stream``)."""
    name = data.get("task", {}).get("name")
    if name is None or "packing" in data.get("data", {}):
        return data
    data = copy.deepcopy(data)
    own = getattr(plugins("playground.tasks").get(name), "packing", "aligned")
    data.setdefault("data", {})["packing"] = "auto" if own == "aligned" else "aligned"
    return data


def _upgrade_mamba_variant(data: dict) -> dict:
    """Mamba2's ``variant`` (which chose Canon beside ``model.canon``) becomes the mixer's
    ``conv`` and Canon positions: ``original`` = conv1d; ``noconv1d`` = none; ``canon_b`` /
    ``canon_ab`` = no conv and Canon B / AB with ``canon_residual`` (positions already in
    ``model.canon`` kept theirs)."""
    mixer = data.get("model", {}).get("mixer", {})
    if "variant" not in mixer:
        return data
    data = copy.deepcopy(data)
    mixer, canon = data["model"]["mixer"], data["model"].setdefault("canon", {})
    variant, residual = mixer.pop("variant"), mixer.pop("canon_residual", False)
    mixer["conv"] = "conv1d" if variant == "original" else "none"
    old = canon.get("positions", "")
    new = "".join(p for p in {"canon_b": "B", "canon_ab": "AB"}.get(variant, "") if p not in old)
    if new and old and residual != canon.get("residual", True):
        raise ConfigError(f"model.mixer.variant={variant!r} with canon_residual={residual} beside "
                          f"model.canon.positions={old!r} (residual={canon.get('residual', True)}) "
                          "mixes residual and plain Canon layers, which today's config cannot say")
    if new:
        canon["positions"] = "".join(p for p in POINTS if p in old + new)
        canon["residual"] = canon.get("residual", True) if old else residual
    return data


def from_container(data: dict) -> Config:
    """Typed config from a resolved dict (e.g. a run's ``config.yaml``, of any version),
    re-running every check."""
    data = upgrade(dict(data))
    data.pop("hydra", None)
    schema = OmegaConf.structured(Config)
    schema.task = OmegaConf.structured(plugin("playground.tasks", data["task"]["name"],
                                              "task.name").Config)
    schema.model.mixer = OmegaConf.structured(
        plugin("playground.mixers", data["model"]["mixer"]["name"], "model.mixer.name").Config)
    return to_objects(OmegaConf.merge(schema, data))


def size_preset(label: str) -> dict:
    """The model fields of a size preset (``conf/size/<label>.yaml``, the one table of sizes)."""
    path = CONF_DIR / "size" / f"{label}.yaml"
    if not path.exists():
        raise ConfigError(f"size={label!r} is invalid: no preset {path}")
    return OmegaConf.to_container(OmegaConf.load(path))

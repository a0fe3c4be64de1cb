"""Estimated GPU time of a sweep's runs, from the project's measured training throughput
(``throughput.csv`` beside this file: each row one measurement with its device, date and record).

One run's estimate, in GPU-seconds (``estimate``):

- **step** = the longer of its compute time and its floor. Compute time: the step's tokens
  (batch × context) ÷ the tokens/s of the nearest ``compute`` row of its backbone and Canon
  setting, scaled by FLOPs per token (``flops_per_token``) where the row's size or context
  differ. Floor: the smallest step time per block of the backbone's ``floor`` rows (each a
  small, host-bound step, or an upper bound on one: a compute-bound run, runs sharing a GPU; the
  host's launches per block, which the model's width does not change) × the run's blocks; runs
  sharing a GPU (``per_gpu``) overlap their floors, so each pays floor ÷ ``per_gpu`` of GPU time;
- **training** = steps × step;
- **overhead** = start-up and compilation + its evaluations (``COMPILE_S``, ``EVAL_S``, read
  off the run records of ``results/mini/runs``), ÷ ``per_gpu`` for runs sharing a GPU.

What is not a measurement of the run's own configuration is said in the estimate's ``notes``:
a row of another size or context, of another compile mode or Canon setting, an unknown backbone
(Llama's rows are assumed), an eager run, no floor. Not counted: data-parallel runs (the rows are
of one GPU) and the GPUs a sweep leaves idle at its tail.
"""

from __future__ import annotations

import csv
import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from playground.config import CUDAGRAPH_MODES

THROUGHPUT_CSV = Path(__file__).resolve().parent / "throughput.csv"
BACKBONES = {"attention": "llama", "gla": "gla", "mamba2": "mamba2", "gdn": "gdn"}  # by mixer name
# Start-up and compilation: the first 50-step log interval of the compiled run records took
# 13-43 s (median 27 s), the compile in it; GDN's PyTorch chunked path 150-168 s.
DEFAULT_COMPILE_S, COMPILE_S = 30.0, {"gdn": 160.0}
# One evaluation with its checkpoint, (finished - started - wall_time_s) / evaluations of the run
# records, median per task: Lano (generation and KL) 15-61 s, the other tasks 2-7 s.
DEFAULT_EVAL_S, EVAL_S = 5.0, {"lano": 45.0}


def size_shape(label: str) -> tuple[int, int]:
    """(layers, width) of a size label such as ``12L768D``."""
    match = re.fullmatch(r"(\d+)L(\d+)D", label)
    if not match:
        raise ValueError(f"size {label!r} is not of the form <layers>L<width>D")
    return int(match[1]), int(match[2])


@dataclass(frozen=True)
class Row:
    """One measurement of ``throughput.csv``."""

    backbone: str  # llama gla mamba2 gdn
    canon: bool
    size: str
    context: int
    batch: int
    tokens_per_s: float
    kind: str  # compute | floor
    compile_mode: str
    device: str
    date: str
    source: str

    @property
    def layers(self) -> int:
        return size_shape(self.size)[0]

    @property
    def width(self) -> int:
        return size_shape(self.size)[1]

    @property
    def blocks(self) -> int:
        return self.layers * (2 if self.backbone == "mamba2" else 1)  # Mamba2 rows: model=mamba2

    @property
    def step_s(self) -> float:
        return self.batch * self.context / self.tokens_per_s

    @property
    def record(self) -> str:
        """The record's folder, without a file name or a remark in brackets."""
        base = self.source.split(" (")[0]
        return base.rsplit("/", 1)[0] if base.endswith(".json") else base


@dataclass
class Shape:
    """What the estimate reads of one run's composed config."""

    backbone: str  # the mixer's name: attention, gla, mamba2, gdn or another
    canon: bool
    layers: int
    width: int
    blocks: int  # layers × the model's depth multiplier (Mamba2: 2)
    context: int
    batch: int
    steps: int
    compiled: bool
    compile_mode: str
    evals: int
    task: str

    @classmethod
    def of(cls, cfg) -> Shape:
        m, t = cfg.model, cfg.train
        evals = (t.steps // t.eval_every + bool(t.steps % t.eval_every)) if t.eval_every else 1
        evals += sum(1 for s in (t.get("length_scales") or []) if s != 1)  # longer tasks at the end
        return cls(str(m.mixer.name), bool(m.canon.positions), int(m.n_layers), int(m.d_model),
                   int(m.n_layers) * int(m.get("depth_multiplier") or 1), int(cfg.task.context),
                   int(t.batch_size), int(t.steps), bool(t.get("compile", False)),
                   str(t.get("compile_mode", "default")), evals, str(cfg.task.name))


@dataclass
class Estimate:
    """One run's estimated GPU-seconds and what they rest on."""

    gpu_s: float
    train_s: float
    overhead_s: float
    tokens_per_s: float  # the compute-bound rate (before the floor)
    rows: list[Row] = field(default_factory=list)  # the rows that set it
    notes: list[str] = field(default_factory=list)  # what was assumed


@functools.lru_cache(maxsize=4)
def load_rows(path: Path = THROUGHPUT_CSV) -> tuple[Row, ...]:
    """The rows of ``throughput.csv`` (lines starting with ``#`` are comments)."""
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    return tuple(Row(r["backbone"], r["canon"] == "on", r["size"], int(r["context"]),
                     int(r["batch"]), float(r["tokens_per_s"]), r["kind"], r["compile_mode"],
                     r["device"], r["date"], r["source"]) for r in csv.DictReader(lines))


def flops_per_token(layers: int, width: int, context: int, attention: bool) -> float:
    """Training FLOPs per token of ``layers`` blocks of 12·width² weights, ``6·N + 12·L·d·T``
    (docs/PERFORMANCE.md, "How a figure is measured"); the second term for attention only."""
    return 6 * 12 * layers * width**2 + (12 * layers * width * context if attention else 0)


def _candidates(rows, shape: Shape, kind: str, notes: list[str]) -> list[Row]:
    """The rows of ``kind`` of the run's backbone, Canon setting and compile mode; where there
    are none, the nearest set (Llama's for an unknown backbone, the other Canon setting, another
    compile mode), said in ``notes``."""
    what = "throughput" if kind == "compute" else "small-step floor"
    backbone = BACKBONES.get(shape.backbone, "llama")
    if shape.backbone not in BACKBONES and kind == "compute":
        notes.append(f"backbone {shape.backbone!r} has no measured throughput: Llama's assumed")
    own = [r for r in rows if r.kind == kind and r.backbone == backbone]
    same = [r for r in own if r.canon == shape.canon]
    if own and not same:
        same = own
        has, other = ("with", "without") if shape.canon else ("without", "with")
        notes.append(f"{backbone} {has} Canon has no measured {what}: {other} Canon's assumed")
    mode = [r for r in same if r.compile_mode == shape.compile_mode]
    if same and not mode:
        mode = same
        notes.append(f"{backbone} has no {what} measured with compile_mode={shape.compile_mode}: "
                     f"compile_mode={same[0].compile_mode}'s used (this run's mode may be slower)")
    return mode


def nearest(rows, shape: Shape) -> Row:
    """The row nearest the run's size and context (size, layers × width², weighs double; ties:
    the newest measurement; of rows of one size, context and date, the one further down)."""
    def distance(r: Row) -> tuple[float, int]:
        size = abs(math.log(r.layers * r.width**2 / (shape.layers * shape.width**2)))
        return 2 * size + abs(math.log(r.context / shape.context)), -int(r.date.replace("-", ""))
    last = {(r.size, r.context, r.date): r for r in rows}  # each key in its place, its last row
    return min(last.values(), key=distance)


def compute_rate(shape: Shape, rows=None) -> tuple[float, Row, list[str]]:
    """The run's compute-bound tokens/s on one GPU: the nearest ``compute`` row, scaled by FLOPs
    per token where its size or context differ (never faster for a model smaller than the
    row's); with notes of what was assumed."""
    notes: list[str] = []
    found = _candidates(rows or load_rows(), shape, "compute", notes)
    if not found:
        raise ValueError(f"no compute row for {shape.backbone} in {THROUGHPUT_CSV.name}")
    row = nearest(found, shape)
    attention = row.backbone == "llama"
    factor = (flops_per_token(row.layers, row.width, row.context, attention)
              / flops_per_token(shape.layers, shape.width, shape.context, attention))
    if (row.layers, row.width, row.context) != (shape.layers, shape.width, shape.context):
        smaller = shape.layers * shape.width**2 < row.layers * row.width**2
        factor = min(factor, 1.0) if smaller else factor
        notes.append(f"{row.backbone} at {shape.layers}L{shape.width}D context {shape.context}: "
                     f"scaled by FLOPs per token from its row at {row.size} context {row.context}"
                     + (" (no faster: smaller than the measured sizes)" if smaller else ""))
    return row.tokens_per_s * factor, row, notes


def floor_step(shape: Shape, rows=None) -> tuple[float, Row | None, list[str]]:
    """Seconds below which the run's step does not go: the smallest step time per block of the
    ``floor`` rows × the run's blocks, with its row and notes; 0 (and a note) where the backbone
    has none. Every row bounds the floor from above, so the tightest holds for every size (the
    nearest row's would let a larger model's floor come out below a smaller one's)."""
    notes: list[str] = []
    found = _candidates(rows or load_rows(), shape, "floor", notes)
    if not found:
        return 0.0, None, [f"no small-step floor measured for {shape.backbone}: steps taken as "
                           "compute-bound (an underestimate for steps of few tokens)"]
    # a floor is the host's launches per step: one measured with CUDA graphs says nothing of a
    # step without them, nor the other way round
    graphs = shape.compile_mode in CUDAGRAPH_MODES
    alike = [r for r in found if (r.compile_mode in CUDAGRAPH_MODES) == graphs]
    if not alike:
        return 0.0, None, [f"no small-step floor measured for {shape.backbone} "
                           f"{'with' if graphs else 'without'} CUDA graphs: steps taken as "
                           "compute-bound"]
    row = min(alike, key=lambda r: r.step_s / r.blocks)
    return row.step_s / row.blocks * shape.blocks, row, notes


def estimate(cfg, per_gpu: int = 1, rows=None) -> Estimate:
    """Estimated GPU-seconds of the run of composed config ``cfg`` (or its ``Shape``) on one GPU
    that ``per_gpu`` runs share (the module's docstring says how)."""
    shape = cfg if isinstance(cfg, Shape) else Shape.of(cfg)
    rate, row, notes = compute_rate(shape, rows)
    floor, floor_row, floor_notes = floor_step(shape, rows)
    notes += floor_notes
    if not shape.compiled:
        notes.append("train.compile=false: the rows are of compiled runs, an eager run is slower "
                     "(GDN: ×2.14, docs/PERFORMANCE.md)")
    compute = shape.batch * shape.context / rate
    step = max(compute, floor / per_gpu)
    overhead = (COMPILE_S.get(BACKBONES.get(shape.backbone, ""), DEFAULT_COMPILE_S)
                + shape.evals * EVAL_S.get(shape.task, DEFAULT_EVAL_S)) / per_gpu
    used = [row] + ([floor_row] if floor_row is not None and floor / per_gpu > compute else [])
    return Estimate(shape.steps * step + overhead, shape.steps * step, overhead, rate, used, notes)


def provenance(rows) -> str:
    """``H200 throughput from docs/bench/…`` for the rows used: their devices and records."""
    devices = "/".join(sorted({r.device for r in rows}, reverse=True))
    return f"{devices} throughput from {', '.join(sorted({r.record for r in rows}))}"

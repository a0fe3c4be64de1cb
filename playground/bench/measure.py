"""Measurements behind ``playground-bench`` (speed, memory, data throughput). Each function
returns a plain dict, so the CLI can print it and write it as JSON.

FLOPs of a training step (forward + backward), per token: ``6·N + 12·L·d·T`` — N the matmul
parameters (non-embedding + the output head), L attention layers of width d, T the context
(the second term counts attention scores and values as dense; linear-time mixers have no such
term). MFU = FLOPs per second / the accelerator's dense bf16 peak (989 TFLOP/s for H100/H200).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from playground.config import compose, to_objects
from playground.data.loader import Batches
from playground.data.packing import resolve_packing, shard_size
from playground.errors import check
from playground.run.device import HOST_RUNS, device_for, loader_workers
from playground.run.loop import compiled, make_optimizer, train_step
from playground.tasks import build_task

PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12}
BENCH_DEFAULTS = ["wandb.mode=disabled", "train.progress=false", "out_dir=/tmp/playground-bench"]


def peak_flops(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_BF16.items() if k in name), None)


def flops_per_token(model, context: int) -> float:
    counts = model.param_counts()
    matmul = counts["non_embedding"] + model.head.weight.numel()
    attention_layers = sum(1 for b in model.blocks if b.mixer.__class__.__name__ == "Attention")
    return 6 * matmul + 12 * attention_layers * model.cfg.d_model * context


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn: Callable[[], object], device: torch.device, steps: int, warmup: int,
           ready: Callable[[], object] | None = None) -> float:
    """Seconds per call of ``fn`` after ``warmup`` calls (CUDA-synchronised); ``ready`` is
    called between the two."""
    for _ in range(warmup):
        fn()
    _sync(device)
    if ready is not None:
        ready()
    tic = time.perf_counter()
    for _ in range(steps):
        fn()
    _sync(device)
    return (time.perf_counter() - tic) / steps


def _training_step(overrides: list[str], data: str):
    """A training step as a run takes it: the config, device, model and ``one_step`` — on one
    pre-made batch (``data='fixed'``: the model's speed alone) or on the loader's next batch
    (``'real'``: shows whether the GPU waits for data); also the task and the loader's workers."""
    from playground.model import build_model

    cfg = to_objects(compose([*BENCH_DEFAULTS, *overrides]))
    device = device_for(cfg.train)
    task = build_task(cfg.task)
    model = build_model(cfg.model, len(task.vocab), seed=cfg.seed).to(device)
    step_fn = compiled(model, cfg.train)
    opt = make_optimizer(model, cfg.train)
    t = cfg.train
    # a pre-made batch needs no workers
    # (idle ones prefetching beside the timed steps would not help)
    workers = loader_workers(cfg.data.num_workers, device) if data == "real" else 0
    batches = Batches(task, t.batch_size, shard_size(task, cfg.data.shard_examples), workers,
                      cfg.data.prefetch, packing=cfg.data.packing)
    fixed = next(batches)

    def one_step():
        batch = fixed if data == "fixed" else next(batches)
        train_step(step_fn, opt, batch.tokens, batch.mask, None, t, device)

    return cfg, device, model, one_step, task, workers


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def train_speed(overrides: list[str], steps: int = 20, warmup: int = 5, data: str = "fixed",
                ready: Callable[[], object] | None = None, blocks: int = 1) -> dict:
    """Training throughput of one config (``data``: see :func:`_training_step`). ``ready``: called
    between the warm-up and the timed steps (the barrier of :func:`shared_train_speed`);
    ``timed_window``: when the timed steps began and ended (epoch s).

    The timed steps come in ``blocks`` blocks of ``steps`` steps each, and ``step_s`` (with the
    tokens/s and MFU from it) is the fastest block's mean step; ``block_step_s`` lists every
    block's. On a lent GPU a block of steps can read 10–40 % slow for reasons outside the model —
    the host falling behind, the GPU lowering its clock at its power cap — so that one block of
    20 steps made the same config read ×1.34 in one process and ×1.73 in another (H200,
    2026-11-26, docs/PERFORMANCE.md); the fastest of three blocks reads the model."""
    cfg, device, model, one_step, task, workers = _training_step(overrides, data)
    t = cfg.train
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    # the first step compiles (and autotunes): the first warm-up step
    first = _timed(one_step, device, 1, 0)
    block_s = [_timed(one_step, device, steps, max(warmup - 1, 0), ready)]
    block_s += [_timed(one_step, device, steps, 0) for _ in range(blocks - 1)]
    seconds, end = min(block_s), time.time()
    window = [end - sum(block_s) * steps, end]
    tokens = t.batch_size * cfg.task.context
    flops = flops_per_token(model, cfg.task.context) * tokens / seconds
    peak = peak_flops(device)
    return {"overrides": overrides, "device": _device_name(device),
            "step_s": seconds, "block_step_s": block_s, "first_step_s": first,
            "tokens_per_s": tokens / seconds, "tflops": flops / 1e12,
            "mfu": flops / peak if peak else None, "data": data, "loader_workers": workers,
            "packing": resolve_packing(task, cfg.data.packing), "compile": t.compile,
            "deterministic": torch.are_deterministic_algorithms_enabled(),
            "peak_memory_gib": torch.cuda.max_memory_allocated(device) / 2**30
                               if device.type == "cuda" else None,
            "params": model.param_counts()["total"], "kernels": model.kernel_paths(device),
            "timed_window": window}


def step_profile(overrides: list[str], steps: int = 10, warmup: int = 5, top: int = 15,
                 data: str = "fixed") -> dict:
    """Where a training step's time goes: its wall time per step (``steps`` steps after ``warmup``),
    then ``steps`` more under the PyTorch profiler, and the ``top`` entries by their own time per
    step. On CUDA the entries are GPU kernels and ``busy`` is their total over the wall time (near
    1: the GPU never waits for the host); on the CPU they are operators (``busy`` None)."""
    from torch.profiler import ProfilerActivity, profile

    cfg, device, model, one_step, _task, _workers = _training_step(overrides, data)
    _timed(one_step, device, 1, 0)  # compiles
    wall = _timed(one_step, device, steps, max(warmup - 1, 0))
    cuda = device.type == "cuda"
    with profile(activities=[ProfilerActivity.CPU,
                             *([ProfilerActivity.CUDA] if cuda else [])]) as prof:
        for _ in range(steps):
            one_step()
        _sync(device)
    kind = torch.autograd.DeviceType.CUDA if cuda else torch.autograd.DeviceType.CPU
    events = [e for e in prof.key_averages() if e.device_type == kind]

    def own(e) -> float:  # seconds per step spent in the entry itself
        return (e.self_device_time_total if cuda else e.self_cpu_time_total) / steps / 1e6

    total = sum(own(e) for e in events)
    rows = [{"name": e.key, "ms_per_step": own(e) * 1e3, "calls_per_step": e.count / steps,
             "share": own(e) / total if total else 0.0}
            for e in sorted(events, key=own, reverse=True)[:top]]
    return {"overrides": overrides, "device": _device_name(device), "compile": cfg.train.compile,
            "data": data, "kernels": model.kernel_paths(device), "steps": steps, "step_s": wall,
            "tokens_per_s": cfg.train.batch_size * cfg.task.context / wall,
            "entries": "GPU kernels" if cuda else "CPU operators", "profiled_s_per_step": total,
            "busy": total / wall if cuda else None, "top": rows}


def _copy(overrides: list[str], steps: int, warmup: int, data: str, copies: int, blocks: int,
          barrier, results) -> None:
    """One process of :func:`shared_train_speed` (module level: spawned processes import it);
    with ``data=real`` its loader takes its share of the cores, as a run of a local sweep does."""
    os.environ[HOST_RUNS] = str(copies)
    try:
        results.put(train_speed(overrides, steps, warmup, data, ready=barrier.wait, blocks=blocks))
    except BaseException as err:  # noqa: BLE001 - reported to the parent, which raises it
        barrier.abort()  # the copies waiting on the barrier stop too
        results.put({"error": f"{type(err).__name__}: {err}"})


def shared_train_speed(overrides: list[str], copies: int, steps: int = 20, warmup: int = 5,
                       data: str = "fixed", isolate: bool = False, blocks: int = 1) -> dict:
    """``copies`` processes training the same config at once on one device, as the runs of a
    local sweep that share a GPU (``per_gpu``): their total tokens/s (and MFU), each copy's, and
    ``overlap``, the share of the timed steps that all copies ran together (they start them at a
    barrier after their warm-ups; near 1 means the total is a true concurrent throughput). Under
    CUDA MPS the copies' kernels may run side by side; without it the GPU time-slices them.
    ``isolate``: a single copy too in a process of its own, so that a config timed after others
    shares no compiled frames, CUDA graph pools or cached memory with them (in one process, Mamba2
    with CUDA graphs read 114–119 ms a step after Llama and 105 ms before it; in processes of its
    own, after Llama's, 110–111 ms: H200, 2026-11-26, docs/PERFORMANCE.md). ``blocks``: a single
    copy's, as in :func:`train_speed`; copies that share the device time one block of
    ``steps × blocks`` steps each, since their total counts only while they all run."""
    if copies > 1:
        steps, blocks = steps * blocks, 1
    if copies == 1 and not isolate:
        return {**train_speed(overrides, steps, warmup, data, blocks=blocks), "copies": 1,
                "overlap": 1.0}
    # a bad override fails here, before any copy starts
    to_objects(compose([*BENCH_DEFAULTS, *overrides]))
    import multiprocessing
    from queue import Empty

    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(copies), ctx.Queue()
    # not daemonic: a copy's loader starts worker processes of its own
    procs = [ctx.Process(target=_copy,
                         args=(overrides, steps, warmup, data, copies, blocks, barrier, queue))
             for _ in range(copies)]
    for proc in procs:
        proc.start()
    results: list[dict] = []
    try:
        while len(results) < copies:
            try:
                results.append(queue.get(timeout=5))
            except Empty:
                dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                if dead:
                    raise RuntimeError(f"copies={copies}: a copy died "
                                       f"(exit code {dead[0]}) before reporting") from None
            errors = [r["error"] for r in results if "error" in r]
            if errors:
                raise RuntimeError(f"copies={copies}: a copy failed: {errors[0]}")
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.terminate()
    starts, ends = [r["timed_window"][0] for r in results], [r["timed_window"][1] for r in results]
    longest = max(e - s for s, e in zip(starts, ends))
    total = sum(r["tokens_per_s"] for r in results)
    # peak memory (and MFU, on a known GPU): CUDA only
    on_cuda = results[0]["peak_memory_gib"] is not None
    return {**results[0], "copies": copies, "tokens_per_s": total,
            "mfu": None if results[0]["mfu"] is None else sum(r["mfu"] for r in results),
            "tflops": sum(r["tflops"] for r in results),
            "step_s": sum(r["step_s"] for r in results) / copies,
            "per_copy_tokens_per_s": [r["tokens_per_s"] for r in results],
            "peak_memory_gib": max(r["peak_memory_gib"] for r in results) if on_cuda else None,
            "overlap": max(0.0, min(ends) - max(starts)) / longest if longest > 0 else 0.0,
            "timed_window": [min(starts), max(ends)]}


@dataclass(frozen=True)
class Backbone:
    """A backbone of the bench's tables: the config overrides that select it and, for a Canon
    variant, the key of its no-Canon twin. ``speed``: a row of the performance table too (every
    backbone is a row of the parameter table)."""

    key: str
    label: str
    overrides: str
    twin: str | None = None
    speed: bool = True


# The one list of backbones that ``playground-bench params`` counts and ``playground-bench table``
# times (rows: backbones with and without Canon; columns: the paper's four sizes at context 2048
# and the mini recipe) — what docs/PERFORMANCE.md's table measures.
# GLA and Mamba2 compiled with CUDA graphs: without them their steps wait on the host (GLA + Canon:
# ×0.75–0.79 of the step with them, docs/PERFORMANCE.md)
GRAPHS_MODE = "train.compile_mode=reduce-overhead"
GRAPHS = f"train.compile=true {GRAPHS_MODE}"
BACKBONES = [
    Backbone("llama", "Llama (RoPE)", "mixer=rope canon=none train.compile=true"),
    Backbone("llama_canon", "Llama + Canon-ABCD",
             "mixer=rope canon=ABCD train.compile=true", "llama"),
    Backbone("gla", "GLA", f"mixer=gla canon=none {GRAPHS}"),
    Backbone("gla_canon", "GLA + Canon-ABCD", f"mixer=gla canon=ABCD {GRAPHS}", "gla"),
    Backbone("gdn", "GDN", "mixer=gdn canon=none train.compile=true"),
    Backbone("gdn_canon", "GDN (no conv) + Canon-ABCD",
             "mixer=gdn_noconv canon=ABCD train.compile=true", "gdn"),
    Backbone("mamba2", "Mamba2 (2× layers, no MLP)",
             f"model=mamba2 mixer=mamba2 canon=none {GRAPHS}"),
    Backbone("mamba2_canon", "Mamba2 + Canon-AB(no-res)",
             f"model=mamba2 mixer=mamba2_noconv1d canon=AB_nores {GRAPHS}", "mamba2"),
    Backbone("mamba2_mlp", "Mamba2-mlp", "model=mamba2_mlp mixer=mamba2 canon=none", speed=False),
    Backbone("mamba2_mlp_expand1.5", "Mamba2-mlp, expand 1.5",
             "model=mamba2_mlp mixer=mamba2 model.mixer.expand=1.5 canon=none", speed=False),
]
TABLE_ROWS = {b.key: b for b in BACKBONES if b.speed}
TABLE_COLUMNS: dict[str, str] = {
    **{size: f"task=depo1 size={size} train.batch_size=16"
       for size in ("8L512D", "8L768D", "12L512D", "12L768D")},
    "mini": "task=depo1_K4 task.context=512 task.N=25 size=8L512D train=paper train.batch_size=64",
}


def count_params(b: Backbone, size: str, vocab: int) -> tuple[int, int]:
    """(total parameters, number of blocks) of backbone ``b`` at a size preset, built from the
    config that its overrides compose (as a run would) on the meta device."""
    from playground.model import build_model

    cfg = to_objects(compose([*b.overrides.split(), f"size={size}"])).model
    with torch.device("meta"):
        model = build_model(cfg, vocab)
    return model.param_counts()["total"], len(model.blocks)


def bench_table(rows: list[str], columns: list[str], extra: list[str], steps: int, warmup: int,
                path: Path | None = None, blocks: int = 1) -> list[dict]:
    """Measure every (column, row) cell, each in a spawned process of its own (``isolate`` of
    :func:`shared_train_speed`: a cell shares no compiled frames, CUDA graph pools or cached
    memory with the cells before it), in column order, adding its step time over its no-Canon
    twin's and over compiled Llama's in the same column. With ``path``,
    the results so far are rewritten there (atomically) after every cell, and cells already in
    that file are not measured again, so a table can be filled over several calls. A cell that
    fails (e.g. out of memory) is recorded with its error and the table goes on."""
    from playground.cli import read_json, write_json

    for keys, known, what in ((rows, TABLE_ROWS, "rows"), (columns, TABLE_COLUMNS, "cols")):
        for key in keys:
            check(key in known, what, key, f"one of {', '.join(known)}")
    cells = {(c, r): [*TABLE_COLUMNS[c].split(), *TABLE_ROWS[r].overrides.split(), *extra]
             for c in columns for r in rows}
    for overrides in cells.values():  # every cell's config is checked before anything is measured
        to_objects(compose([*BENCH_DEFAULTS, *overrides]))
    done = {(r["column"], r["row"]): r for r in (read_json(path) if path and path.exists() else [])}
    for (col, row), overrides in cells.items():
        if (col, row) not in done:
            cell = {"column": col, "row": row, "label": TABLE_ROWS[row].label,
                    "twin": TABLE_ROWS[row].twin}
            try:
                cell |= shared_train_speed(overrides, 1, steps, warmup, isolate=True, blocks=blocks)
            except Exception as err:  # noqa: BLE001 — recorded in the table, the next cell runs
                cell["error"] = f"{type(err).__name__}: {err}"[:500]
            done[(col, row)] = cell
            if path:
                write_json(path, _with_ratios(done))
    return _with_ratios(done)


def _with_ratios(cells: dict[tuple[str, str], dict]) -> list[dict]:
    """Each cell with ``x_twin`` and ``x_llama``: step time over its twin's / Llama's (the row
    ``llama``: compiled in the table's own rows), in the order of TABLE_COLUMNS then TABLE_ROWS
    whatever order the cells were measured in."""
    order = lambda key, known: list(known).index(key) if key in known else len(known)  # noqa: E731
    out = []
    for (col, _), cell in sorted(cells.items(), key=lambda kv: (order(kv[0][0], TABLE_COLUMNS),
                                                                order(kv[0][1], TABLE_ROWS))):
        cell = dict(cell)
        for name, other in (("x_twin", cell["twin"]), ("x_llama", "llama")):
            ref = cells.get((col, other)) if other else None
            ok = ref is not None and "step_s" in ref and "step_s" in cell
            cell[name] = cell["step_s"] / ref["step_s"] if ok else None
        out.append(cell)
    return out


def table_markdown(cells: list[dict]) -> str:
    """The table as markdown: one line per cell, the columns' cells together."""
    lines = ["| config | model | tokens/s | MFU | peak memory | × no-Canon twin | × Llama |",
             "|---|---|---|---|---|---|---|"]
    fmt = lambda v, f: "—" if v is None else f.format(v)  # noqa: E731
    for c in cells:
        if "error" in c:
            lines.append(f"| {c['column']} | {c['label']} | failed: {c['error'][:80]} | | | | |")
            continue
        how = "compiled" if c["compile"] else "eager"
        how += ", CUDA graphs" if GRAPHS_MODE in c.get("overrides", []) else ""
        lines.append(f"| {c['column']} | {c['label']}, {how} | {c['tokens_per_s']:,.0f} | "
                     f"{fmt(c['mfu'], '{:.1%}')} | {fmt(c['peak_memory_gib'], '{:.1f} GiB')} | "
                     f"{fmt(c['x_twin'], '×{:.2f}')} | {fmt(c['x_llama'], '×{:.2f}')} |")
    return "\n".join(lines)


def _device_seconds(fn: Callable[[], object], steps: int) -> float:
    """GPU seconds per call of ``fn``: the kernels' own time from the profiler (no host time)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA], acc_events=True) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    return sum(e.self_device_time_total for e in prof.key_averages()) / 1e6 / steps


def canon_speed(widths: list[int], batch: int = 16, context: int = 2048,
                dtype=torch.bfloat16) -> list[dict]:
    """Forward + backward time of one Canon layer (kernel 4, residual) per backend and width:
    ``us`` the wall clock per call as an eager caller pays it (host dispatch included),
    ``device_us`` the GPU kernels' time alone (profiler), ``floor_us`` the memory floor."""
    from playground.kernels import canon_kernel, causal_conv1d_kernel, fla_canon_kernel
    from playground.layers.canon import causal_conv, causal_conv_shifted

    device = torch.device("cuda")
    compiled = torch.compile(lambda x, w: x + causal_conv_shifted(x, w.to(x.dtype), None))
    backends = {"torch conv1d (eager)": lambda x, w: x + causal_conv(x, w.to(x.dtype), None),
                "torch shifted (compiled)": compiled}
    if canon_kernel() is not None:
        backends["triton (ours)"] = lambda x, w: canon_kernel()(x, w, None, False, True)
    if causal_conv1d_kernel() is not None:  # the package of the paper's code, where installed
        backends["causal-conv1d"] = lambda x, w: causal_conv1d_kernel()(x, w, None, False, True)
    if fla_canon_kernel() is not None:  # fla's ShortConvolution kernel, where installed
        backends["fla ShortConvolution"] = lambda x, w: fla_canon_kernel()(x, w, None, False, True)
    rows = []
    for c in widths:
        x = torch.randn(batch, context, c, device=device, dtype=dtype, requires_grad=True)
        w = (torch.rand(c, 4, device=device) - 0.5).requires_grad_()
        floor = 5 * x.numel() * x.element_size() / 3.35e12  # read x, dy; write y, dx; re-read x
        grad = torch.randn_like(x)  # a dense upstream gradient, as in a model (not sum()'s expand)
        for name, fn in backends.items():
            call = lambda fn=fn, x=x, w=w, g=grad: fn(x, w).backward(g)  # noqa: E731
            seconds = _timed(call, device, 50, 10)
            rows.append({"width": c, "batch": batch, "context": context, "backend": name,
                         "us": seconds * 1e6, "device_us": _device_seconds(call, 20) * 1e6,
                         "floor_us": floor * 1e6})
    return rows


def data_speed(presets: list[str], examples: int = 2000, workers: tuple[int, ...] = (0, 8),
               seconds: float = 10.0) -> list[dict]:
    """Generation tokens/s on one core (examples as the training stream makes them: a shard at
    a time, without meta) and loader tokens/s with N workers (packed windows, padding
    included)."""
    rows = []
    for preset in presets:
        cfg = to_objects(compose([f"task={preset}"]))
        task = build_task(cfg.task)
        shard = shard_size(task)
        tic = time.perf_counter()
        tokens = sum(len(ex) for lo in range(0, examples, shard)
                     for ex in task.examples("train", lo, min(lo + shard, examples), meta=False))
        row = {"task": preset,
               "generate_tokens_per_s_per_core": tokens / (time.perf_counter() - tic),
               "packing": resolve_packing(task, cfg.data.packing)}
        for n in workers:
            batches = Batches(task, 8, shard_size(task), num_workers=n, prefetch=4,
                              packing=cfg.data.packing)
            next(batches)  # workers started
            tic, count = time.perf_counter(), 0
            while time.perf_counter() - tic < seconds:
                count += next(batches).tokens.numel()
            row[f"loader_tokens_per_s_{n}_workers"] = count / (time.perf_counter() - tic)
        rows.append(row)
    return rows


GENERATE_MODES = {"graph": dict(graph=True), "cached": dict(), "rerun": dict(use_cache=False)}


def generate_speed(overrides: list[str], count: int = 1000, batch_size: int = 64,
                   modes: Sequence[str] = tuple(GENERATE_MODES)) -> dict:
    """Evaluation time of a generative task (default Brevo1 N=110) on ``count`` eval examples,
    per decoding mode: ``graph`` (fixed-shape cached steps, a CUDA graph on CUDA), ``cached``
    (cached steps) and ``rerun`` (the whole prefix again for every token). ``same_tokens``: every
    mode generated the same tokens; ``agree_<mode>``: the fraction of examples whose tokens equal
    the first mode's (in bf16 a different kernel or reduction order can flip a near-tie of an
    untrained model's logits, and the continuation then differs)."""
    from playground.model import build_model, generate

    for mode in modes:
        check(mode in GENERATE_MODES, "modes", mode, f"one of {', '.join(GENERATE_MODES)}")
    cfg = to_objects(compose([*BENCH_DEFAULTS, *overrides]))
    device = device_for(cfg.train)
    task = build_task(cfg.task)
    model = build_model(cfg.model, len(task.vocab), seed=0).to(device).eval()
    examples = [task.example("eval", i) for i in range(count)]
    prompts = [ex.tokens[: ex.meta["answer_start"]] for ex in examples]
    max_new = task.cfg.N + 2
    out, tokens = ({"overrides": overrides, "examples": count, "max_new": max_new,
                    "batch_size": batch_size}, [])
    for mode in modes:
        _sync(device)
        tic = time.perf_counter()
        gens = generate(model, prompts, max_new, stop=[task.vocab.eos], batch_size=batch_size,
                        pad_id=task.vocab.pad, **GENERATE_MODES[mode])
        _sync(device)
        out[f"{mode}_s"] = time.perf_counter() - tic
        out["new_tokens"] = int(sum(len(g.tokens) for g in gens))
        tokens.append([g.tokens.tolist() for g in gens])
    out["same_tokens"] = all(t == tokens[0] for t in tokens)
    for mode, t in zip(modes[1:], tokens[1:]):
        out[f"agree_{mode}"] = sum(a == b for a, b in zip(t, tokens[0])) / count
    return out

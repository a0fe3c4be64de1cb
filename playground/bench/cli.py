"""``playground-bench``: figures about the models, one command each (``playground.bench.measure``
holds the measurements). Every command takes ``json=FILE`` to keep its figures (written
atomically).

- ``params``: parameter counts of every backbone at the paper's four sizes, with a task's
  vocabulary (Depo1's by default), built on the meta device (no memory, no compute).
- ``train``: training tokens/s, MFU and peak memory of a config, and of variants of it with
  ratios to the first (``compare="canon=none | canon=ABCD"``); ``data=real`` uses the loader.
- ``profile``: where a training step's time goes — the top GPU kernels (on the CPU, operators)
  by their own time per step, from the PyTorch profiler, and how busy the GPU is.
- ``table``: the performance table of docs/PERFORMANCE.md — every backbone with and without
  Canon (``measure.TABLE_ROWS``) at the paper's four sizes and the mini recipe
  (``measure.TABLE_COLUMNS``): tokens/s, MFU, peak memory, × its no-Canon twin, × compiled Llama;
  resumable through its JSON file.
- ``canon``: Canon layer forward+backward time per backend and width (CUDA): wall clock per
  call (what an eager caller pays) and the GPU kernels' own time (profiler).
- ``scaling``: data parallel, global tokens/s under ``torchrun`` with 1, 2, … processes
  (``playground.bench.scaling``).
- ``data``: generation tokens/s per task and core, loader tokens/s with N workers.
- ``generate``: a generative evaluation (Brevo1 N=110 by default), cached vs re-run prefix.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from playground.cli import Args, Command, atomic_write, write_json
from playground.cli import main as cli_main
from playground.config import PAPER_SIZES


def params_table(vocab: int, sizes: Sequence[str] = PAPER_SIZES) -> str:
    """A markdown table: parameters per backbone and size, and the ratio to Llama's."""
    from playground.bench.measure import BACKBONES, count_params

    rows = ["| model | " + " | ".join(sizes) + " |", "|---|" + "---|" * len(sizes)]
    llama = {s: count_params(BACKBONES[0], s, vocab)[0] for s in sizes}
    for b in BACKBONES:
        cells = []
        for s in sizes:
            total, blocks = count_params(b, s, vocab)
            cells.append(f"{total:,} ({total / llama[s]:.3f}×, {blocks} blocks)")
        rows.append(f"| {b.label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def depo1_vocab_size() -> int:
    from playground.config import compose, to_objects
    from playground.tasks import build_task

    return len(build_task(to_objects(compose(["task=depo1"])).task).vocab)


def _emit(result, path: str) -> None:
    print(json.dumps(result, indent=2, default=str))
    if path:
        write_json(Path(path), result)


def cmd_params(args: Args) -> None:
    vocab = args.int("vocab") or depo1_vocab_size()
    print(f"Parameters with a vocabulary of {vocab} tokens (untied embeddings, head dim 64):\n")
    table = params_table(vocab, args.list("sizes"))
    print(table)
    if args["json"]:
        _emit({"vocab": vocab, "table": table}, args["json"])


def _data(args: Args) -> str:
    return args.choice("data", ("fixed", "real"))


def cmd_train(args: Args) -> None:
    from playground.bench.measure import shared_train_speed

    data = _data(args)
    variants = [args.overrides + v.split() for v in (args.list("compare", "|") or [""])]
    counts = args.ints("copies", minimum=1)
    isolate = len(variants) * len(counts) > 1  # each config of a comparison in a fresh process
    steps, warmup, blocks = args.int("steps", 1), args.int("warmup"), args.int("blocks", 1)
    results = [shared_train_speed(v, c, steps, warmup, data, isolate, blocks)
               for v in variants for c in counts]
    base, alone = results[0]["step_s"], results[0]["tokens_per_s"]
    for r in results:
        r["step_time_vs_first"], r["tokens_vs_first"] = (r["step_s"] / base,
                                                         r["tokens_per_s"] / alone)
        copies = (f"  {r['copies']} copies (overlap {r['overlap']:.0%}), "
                  f"total x{r['tokens_vs_first']:.2f}" if r["copies"] > 1 else "")
        paths = "".join(f"  [{kind}: {path}]" for kind, path in r["kernels"].items())
        print(f"{' '.join(r['overrides']):70s} {r['tokens_per_s']:>12,.0f} tok/s  MFU "
              f"{r['mfu'] or 0:.1%}  peak {r['peak_memory_gib'] or 0:.1f} GiB  "
              f"x{r['step_time_vs_first']:.3f}{copies}{paths}")
    _emit(results, args["json"])


def cmd_profile(args: Args) -> None:
    from playground.bench.measure import step_profile

    r = step_profile(args.overrides, args.int("steps", 1), args.int("warmup"), args.int("top", 1),
                     _data(args))
    busy = f" (the GPU busy {r['busy']:.0%} of the wall)" if r["busy"] is not None else ""
    paths = "".join(f" [{kind}: {path}]" for kind, path in r["kernels"].items())
    print(f"{' '.join(r['overrides'])}{paths}: {r['step_s'] * 1e3:.2f} ms/step, "
          f"{r['tokens_per_s']:,.0f} tokens/s; {r['entries']} {r['profiled_s_per_step'] * 1e3:.2f} "
          f"ms/step{busy}")
    print(f"  {'name':80s} {'ms/step':>9s} {'calls':>7s} {'share':>6s}")
    for e in r["top"]:
        print(f"  {e['name'][:80]:80s} {e['ms_per_step']:9.3f} {e['calls_per_step']:7.1f} "
              f"{e['share']:6.1%}")
    if args["json"]:
        write_json(Path(args["json"]), r)


def cmd_table(args: Args) -> None:
    from playground.bench.measure import TABLE_COLUMNS, TABLE_ROWS, bench_table, table_markdown

    rows, cols = args.list("rows") or list(TABLE_ROWS), args.list("cols") or list(TABLE_COLUMNS)
    path = Path(args["json"]) if args["json"] else None
    cells = bench_table(rows, cols, args.overrides, args.int("steps", 1), args.int("warmup"), path,
                        args.int("blocks", 1))
    table = table_markdown(cells)
    print(table)
    if args["md"]:
        atomic_write(Path(args["md"]), (table + "\n").encode())


def cmd_canon(args: Args) -> None:
    from playground.bench.measure import canon_speed

    rows = canon_speed(args.ints("widths", minimum=1), batch=args.int("batch", 1),
                      context=args.int("context", 1))
    for r in rows:
        print(f"[{r['batch']}, {r['context']}, {r['width']}] {r['backend']:28s} {r['us']:9.1f} us "
              f"wall, {r['device_us']:9.1f} us on the GPU  (floor {r['floor_us']:.0f} us)")
    _emit(rows, args["json"])


def cmd_scaling(args: Args) -> None:
    from playground.bench.scaling import scaling

    variants = [args.overrides + v.split() for v in (args.list("compare", "|") or [""])]
    _emit(scaling(variants, args.ints("procs", minimum=1), args.int("steps", 1),
                  args.int("skip"), args.int("log_every", 1), args.flag("per_rank"),
                  rank_batch=args.flag("rank_batch")),
          args["json"])


def cmd_data(args: Args) -> None:
    from playground.bench.measure import data_speed

    workers = tuple(args.ints("workers"))
    _emit(data_speed(args.list("tasks"), workers=workers, seconds=args.float("seconds")),
          args["json"])


def cmd_generate(args: Args) -> None:
    from playground.bench.measure import generate_speed

    overrides = args.overrides or ["task=brevo1", "task.N=110", "size=12L768D", "canon=none"]
    _emit(generate_speed(overrides, args.int("count", 1), args.int("batch_size", 1),
                         args.list("modes")),
          args["json"])


JSON = {"json": ("", "also write the figures to this JSON file")}
BLOCKS = {"blocks": ("3", "blocks of timed steps; a config's step time is its fastest block's mean "
                             "(a block can read slow for reasons outside the model: "
                             "docs/PERFORMANCE.md); copies sharing the device time steps × blocks "
                             "steps in one block")}
DATA = {"data": ("fixed", "fixed: one batch repeated (the model alone); real: from the loader")}
COMMANDS = [
    Command("params", "parameter counts of every backbone at the paper's sizes", cmd_params,
            {"vocab": ("0", "vocabulary size (0: Depo1's)"),
             "sizes": (",".join(PAPER_SIZES), "size presets"),
             **JSON}, examples=("playground-bench params",)),
    Command("train",
            "training tokens/s, MFU and peak memory of a config (and of variants of it)", cmd_train,
            {"compare": ("", "variants separated by |, each a list of overrides: "
                             "'canon=none | canon=ABCD'"),
             "steps": ("20", "timed steps per block"), "warmup": ("5", "untimed steps first"),
             **BLOCKS, **DATA,
             "copies": ("1", "processes training the config at once on the device, as runs sharing "
                             "a GPU (a list: copies=1,4 measures alone, then 4 together; "
                             "tokens/s is their total)"),
             **JSON},
            overrides=(), examples=(
                "playground-bench train task=depo1 size=12L768D train.batch_size=16 "
                "train.compile=true compare='canon=none | canon=ABCD' json=docs/bench/canon.json",
                "playground-bench train task=depo1 size=8L512D data=real data.num_workers=8",
                "playground-bench train task=depo1_K4 task.context=512 size=8L512D train=paper "
                "train.batch_size=64 train.compile=true copies=1,6   # runs sharing a GPU "
                "(try with and without CUDA MPS)")),
    Command("profile", "where a training step's time goes: its top GPU kernels (on the CPU: "
            "operators), from the PyTorch profiler", cmd_profile,
            {"steps": ("10", "steps timed, then as many profiled"),
             "warmup": ("5", "untimed steps first"), "top": ("15", "entries listed"),
             **DATA, **JSON},
            overrides=(), examples=(
                "playground-bench profile task=depo1 size=12L768D train.batch_size=16 model=mamba2 "
                "mixer=mamba2 canon=none model.mixer.backend=mamba_ssm train.compile=true "
                "json=prof.json",
                "playground-bench profile task=depo1_K4 task.context=512 size=8L512D train=paper "
                "train.batch_size=64 canon=ABCD train.compile=true top=25")),
    Command("table",
            "the performance table: backbones ± Canon × the paper's sizes and the mini recipe",
            cmd_table,
            {"rows": ("", "backbone keys, e.g. llama,llama_canon (default: every row of "
                          "playground.bench.measure.TABLE_ROWS)"),
             "cols": ("", "column keys, e.g. mini,12L768D (default: every one of TABLE_COLUMNS: "
                          "the paper's four sizes and the mini recipe)"),
             "steps": ("20", "timed steps per block"),
             "warmup": ("5", "untimed steps first"), **BLOCKS,
             "json": ("", "the cells as JSON, rewritten after each one; cells already there are "
                          "kept, not measured again"),
             "md": ("", "also write the markdown table here")},
            overrides=(), examples=(
                "playground-bench table json=docs/bench/table.json md=docs/bench/table.md",
                "playground-bench table rows=llama,llama_canon cols=mini,12L768D json=t.json")),
    Command("canon", "Canon forward+backward time per backend (CUDA)", cmd_canon,
            {"widths": ("512,768,1536,2304,4096", "channel widths"), "batch": ("16", "sequences"),
             "context": ("2048", "sequence length"), **JSON},
            examples=("playground-bench canon widths=768,2304",
                      "playground-bench canon batch=64 context=512 widths=512,1536,2688")),
    Command("scaling",
            "data parallel: global training tokens/s under torchrun with 1, 2, … processes",
            cmd_scaling,
            {"procs": ("1,2", "process counts (one process is always measured: the reference)"),
             "steps": ("400", "steps per run"),
             "skip": ("200", "the log intervals up to this step are left out (compilation, "
                             "warm-up)"),
             "log_every": ("50", "steps per log interval: the figure is their median"),
             "per_rank": ("false", "false: the config's batch split over the processes (strong "
                                   "scaling); true: the config's batch on every process"),
             "rank_batch": ("true", "strong scaling: also one process at each rank's batch, the "
                                    "cap a smaller batch per GPU sets, and data parallel's own "
                                    "efficiency against it"),
             "compare": ("", "variants separated by |, each a list of overrides"), **JSON},
            overrides=(), examples=(
                "playground-bench scaling task=depo1_K4 task.context=512 task.N=15 size=8L512D "
                "train=paper train.batch_size=64 canon=ABCD train.compile=true "
                "train.compile_mode=reduce-overhead procs=1,2,4 "
                "compare='train.grad_sync=ddp | train.grad_sync=flat'",
                "playground-bench scaling experiment=lano_paper procs=1,2,4 json=cfg3f.json")),
    Command("data", "task generation and loader throughput", cmd_data,
            {"tasks": ("depo1,depo2,brevo1,brevo2,mano,cfg3f,mqar,capo", "task presets"),
             "workers": ("0,8", "loader worker counts"),
             "seconds": ("10", "seconds per measurement"), **JSON},
            examples=("playground-bench data tasks=depo1,cfg3f workers=0,4",)),
    Command("generate",
            "generative evaluation: CUDA-graph / cached decoding vs re-running the prefix",
            cmd_generate,
            {"count": ("1000", "eval examples"), "batch_size": ("256", "prompts per batch"),
             "modes": ("graph,cached,rerun", "decoding modes to time: graph (fixed-shape steps, "
                                             "a CUDA graph on CUDA), cached, rerun (the prefix "
                                             "again per token)"), **JSON},
            overrides=(),
            examples=("playground-bench generate task=brevo1 task.N=110 size=12L768D canon=none",)),
]


def main(argv: Sequence[str] | None = None) -> None:
    cli_main("playground-bench", "speed, memory and parameter figures of the models",
             COMMANDS, argv)


if __name__ == "__main__":
    main()

"""``playground-bench``: figures about the models, one subcommand each.

- ``params``: parameter counts of every backbone at the paper's four sizes, with a task's
  vocabulary (Depo1's by default), built on the meta device (no memory, no compute).
- ``train OVERRIDES [--compare "A" "B" ...]``: training tokens/s, MFU and peak memory of a
  config (and of variants of it, with ratios to the first); ``--data real`` uses the loader.
- ``canon``: Canon layer forward+backward time per backend and width (CUDA).
- ``data``: generation tokens/s per task and core, loader tokens/s with N workers.
- ``generate``: a generative evaluation (Brevo1 N=110 by default), cached vs re-run prefix.

Every subcommand takes ``--json FILE`` to keep its figures (written atomically).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from playground.config import ModelConfig
from playground.layers.canon import CanonConfig
from playground.mixers.attention import AttentionConfig
from playground.mixers.gla import GLAConfig
from playground.mixers.mamba2 import Mamba2Config
from playground.model import build_model

SIZES = {"8L512D": (8, 512), "8L768D": (8, 768), "12L512D": (12, 512), "12L768D": (12, 768)}


@dataclass
class Backbone:
    label: str
    mixer: Any
    canon: str = ""
    mlp: str = "swiglu"
    depth: int = 1
    canon_kw: dict = field(default_factory=dict)


BACKBONES = [
    Backbone("Llama (RoPE)", AttentionConfig()),
    Backbone("Llama + Canon-ABCD", AttentionConfig(), canon="ABCD"),
    Backbone("GLA", GLAConfig()),
    Backbone("GLA + Canon-ABCD", GLAConfig(), canon="ABCD"),
    Backbone("Mamba2 (2× layers, no MLP)", Mamba2Config(), mlp="none", depth=2),
    Backbone("Mamba2 + Canon-AB(no-res)", Mamba2Config(variant="canon_ab"), mlp="none", depth=2),
    Backbone("Mamba2-mlp", Mamba2Config()),
    Backbone("Mamba2-mlp, expand 1.5", Mamba2Config(expand=1.5)),
]


def count_params(b: Backbone, layers: int, d: int, vocab: int) -> tuple[int, int]:
    """(total parameters, number of blocks) of backbone ``b`` at ``layers`` × ``d``."""
    cfg = ModelConfig(n_layers=layers, d_model=d, mlp=b.mlp, depth_multiplier=b.depth,
                      mixer=b.mixer, canon=CanonConfig(positions=b.canon, **b.canon_kw))
    with torch.device("meta"):
        model = build_model(cfg, vocab)
    return model.param_counts()["total"], len(model.blocks)


def params_table(vocab: int, sizes: Sequence[str] = tuple(SIZES)) -> str:
    """A markdown table: parameters per backbone and size, and the ratio to Llama's."""
    rows = ["| model | " + " | ".join(sizes) + " |", "|---|" + "---|" * len(sizes)]
    llama = {s: count_params(BACKBONES[0], *SIZES[s], vocab)[0] for s in sizes}
    for b in BACKBONES:
        cells = []
        for s in sizes:
            total, blocks = count_params(b, *SIZES[s], vocab)
            cells.append(f"{total:,} ({total / llama[s]:.3f}×, {blocks} blocks)")
        rows.append(f"| {b.label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def depo1_vocab_size() -> int:
    from playground.config import compose, to_objects
    from playground.tasks import build_task

    return len(build_task(to_objects(compose(["task=depo1"])).task).vocab)


def cmd_params(args: argparse.Namespace) -> None:
    vocab = args.vocab or depo1_vocab_size()
    print(f"Parameters with a vocabulary of {vocab} tokens (untied embeddings, head dim 64):\n")
    table = params_table(vocab, args.sizes)
    print(table)
    if args.json:
        _emit({"vocab": vocab, "table": table}, args.json)


def _emit(result, path: str | None) -> None:
    import json

    from playground.run.rundir import write_json

    print(json.dumps(result, indent=2, default=str))
    if path:
        write_json(Path(path), result)


def cmd_train(args: argparse.Namespace) -> None:
    from playground.bench.measure import train_speed

    variants = [args.overrides + v.split() for v in (args.compare or [""])]
    results = [train_speed(v, args.steps, args.warmup, args.data) for v in variants]
    base = results[0]["step_s"]
    for r in results:
        r["step_time_vs_first"] = r["step_s"] / base
        print(f"{' '.join(r['overrides']):70s} {r['tokens_per_s']:>12,.0f} tok/s  "
              f"MFU {r['mfu'] or 0:.1%}  peak {r['peak_memory_gib'] or 0:.1f} GiB  x{r['step_time_vs_first']:.3f}")
    _emit(results, args.json)


def cmd_canon(args: argparse.Namespace) -> None:
    from playground.bench.measure import canon_speed

    rows = canon_speed(args.widths)
    for r in rows:
        print(f"C={r['width']:5d} {r['backend']:28s} {r['us']:9.1f} us  (floor {r['floor_us']:.0f} us)")
    _emit(rows, args.json)


def cmd_data(args: argparse.Namespace) -> None:
    from playground.bench.measure import data_speed

    _emit(data_speed(args.tasks, workers=tuple(args.workers), seconds=args.seconds), args.json)


def cmd_generate(args: argparse.Namespace) -> None:
    from playground.bench.measure import generate_speed

    _emit(generate_speed(args.overrides, args.count, args.batch_size), args.json)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="playground-bench", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("params", help="parameter counts of every backbone at the paper's sizes")
    p.add_argument("--vocab", type=int, default=0, help="vocabulary size (default: Depo1's)")
    p.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    p.set_defaults(func=cmd_params)
    t = sub.add_parser("train", help="training tokens/s, MFU and peak memory of configs")
    t.add_argument("overrides", nargs="*", help="Hydra overrides shared by every variant")
    t.add_argument("--compare", nargs="+", help='variants, each a quoted list: "canon=none" "canon=ABCD"')
    t.add_argument("--steps", type=int, default=20)
    t.add_argument("--warmup", type=int, default=5)
    t.add_argument("--data", choices=("fixed", "real"), default="fixed")
    t.set_defaults(func=cmd_train)
    c = sub.add_parser("canon", help="Canon forward+backward time per backend (CUDA)")
    c.add_argument("--widths", type=int, nargs="+", default=[512, 768, 1536, 2304, 4096])
    c.set_defaults(func=cmd_canon)
    d = sub.add_parser("data", help="task generation and loader throughput")
    d.add_argument("--tasks", nargs="+", default=["depo1", "depo2", "brevo1", "brevo2", "mano", "cfg3f", "mqar", "capo"])
    d.add_argument("--workers", type=int, nargs="+", default=[0, 8])
    d.add_argument("--seconds", type=float, default=10.0)
    d.set_defaults(func=cmd_data)
    g = sub.add_parser("generate", help="generative evaluation: cached decoding vs re-running the prefix")
    g.add_argument("overrides", nargs="*", default=["task=brevo1", "task.N=110", "size=12L768D", "canon=none"])
    g.add_argument("--count", type=int, default=1000)
    g.add_argument("--batch-size", type=int, default=256)
    g.set_defaults(func=cmd_generate)
    for cmd in (p, t, c, d, g):
        cmd.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()

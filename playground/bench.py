"""``playground-bench``: figures about the models, one subcommand each.

- ``params``: parameter counts of every backbone at the paper's four sizes, with a task's
  vocabulary (Depo1's by default), built on the meta device (no memory, no compute).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
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
    print(params_table(vocab, args.sizes))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="playground-bench", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("params", help="parameter counts of every backbone at the paper's sizes")
    p.add_argument("--vocab", type=int, default=0, help="vocabulary size (default: Depo1's)")
    p.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    p.set_defaults(func=cmd_params)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()

"""How far apart two trainings of the same small Mamba2 model land after four steps: compiled twice
(`default`), under CUDA graphs twice (`reduce-overhead`), and eager -- the setting of
tests/test_mixers_gpu.py::test_training_under_cuda_graphs_matches_compiled_training[mamba2], which
compares `default` against `reduce-overhead` only. Prints each pair's relative error of the weight
updates (as the test's rel_err), overall and for the five parameters furthest apart."""
import itertools
import sys

import torch

sys.path.insert(0, "tests")
from test_mixers_gpu import rel_err  # noqa: E402

from playground.config import ModelConfig, TrainConfig  # noqa: E402
from playground.layers.canon import CanonConfig  # noqa: E402
from playground.mixers.mamba2 import Mamba2Config  # noqa: E402
from playground.model import build_model  # noqa: E402
from playground.run.loop import compiled, make_optimizer, train_step  # noqa: E402

cfg = ModelConfig(n_layers=2, d_model=256, mixer=Mamba2Config(), mlp="none", depth_multiplier=2,
                  canon=CanonConfig(positions=""))
g = torch.Generator().manual_seed(0)
batches = [(torch.randint(0, 50, (4, 512), generator=g), torch.rand(4, 512, generator=g) < 0.9,
            torch.cumsum(torch.rand(4, 512, generator=g) < 1 / 100, 1)) for _ in range(4)]
runs = {}
for name, compile_, mode in [("default1", True, "default"), ("default2", True, "default"),
                             ("ro1", True, "reduce-overhead"), ("ro2", True, "reduce-overhead"),
                             ("eager1", False, "default"), ("eager2", False, "default")]:
    t = TrainConfig(compile=compile_, compile_mode=mode, batch_size=4, lr=1e-3)
    model = build_model(cfg, 50, seed=0).cuda()
    before = {n: p.detach().float().clone() for n, p in model.named_parameters()}
    step, opt = compiled(model, t), make_optimizer(model, t)
    losses = [train_step(step, opt, tok, mask, seg, t, torch.device("cuda"))[0].item()
              for tok, mask, seg in batches]
    runs[name] = (losses, {n: p.detach().float() - before[n] for n, p in model.named_parameters()})
    torch._dynamo.reset()
    print(name, "losses", [f"{x:.6f}" for x in losses], flush=True)
for a, b in itertools.combinations(runs, 2):
    ua, ub = runs[a][1], runs[b][1]
    total = rel_err(torch.cat([v.flatten() for v in ua.values()]),
                    torch.cat([v.flatten() for v in ub.values()]))
    worst = sorted(((rel_err(ua[n], ub[n]), n) for n in ua), reverse=True)[:5]
    print(f"{a} vs {b}: rel_err {total:.5f}; worst", ", ".join(f"{n} {e:.4f}" for e, n in worst))

"""Where rank 0's step goes, from the profiler traces in profiles/*/trace_rank0.json.gz (20
profiled steps, 405-424): python3 phases.py > phases.txt.

Per job, the medians over the steps of the host's phases, read from the main thread's operators
(wall time under the profiler, which slows the host): prep (slicing, page-locking and copying
the batch), fwd (the compiled forward), loss, bwd (the main thread waits in backward() while the
autograd thread runs the compiled backward and the gradient hooks), clip (the gradient norm,
the finiteness checks) and opt (the optimizer and zero_grad); then the autograd thread's largest
entries in bwd, and how much of the step the GPU's kernels cover (their union; NCCL apart)."""
import gzip
import json
import statistics
from collections import defaultdict
from pathlib import Path

CPU = ("cpu_op", "user_annotation", "cuda_runtime", "python_function", "cuda_driver")


def union_ms(spans: list[tuple[float, float]]) -> float:
    total, cur = 0.0, None
    for a, b in sorted(spans):
        if cur is None or a > cur[1]:
            total += 0 if cur is None else cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    return (total + (0 if cur is None else cur[1] - cur[0])) / 1e3


def analyse(trace: Path) -> str:
    events = [e for e in json.load(gzip.open(trace))["traceEvents"] if e.get("ph") == "X"]
    cpu = [e for e in events if e.get("cat") in CPU]
    main = next(e for e in cpu if e["name"].startswith("Optimizer.step#"))["tid"]
    ops = sorted((e for e in cpu if e["tid"] == main), key=lambda e: e["ts"])

    def first(prefix: str, after: float) -> dict:
        return next(e for e in ops if e["name"].startswith(prefix) and e["ts"] >= after)

    zeros = [e for e in ops if e["name"].startswith("Optimizer.zero_grad")]
    rows, hooks, steps = [], defaultdict(float), 0
    for z, z2 in zip(zeros[1:], zeros[2:]):
        a = z["ts"] + z["dur"]
        fwd = first("Torch-Compiled Region", a)
        ce = first("aten::cross_entropy_loss", fwd["ts"] + fwd["dur"])
        bwd_end = first("aten::detach", ce["ts"] + ce["dur"])["ts"]
        opt = first("Optimizer.step#", bwd_end)["ts"]
        bwd_start = ce["ts"] + ce["dur"]
        rows.append([fwd["ts"] - a, fwd["dur"], bwd_start - fwd["ts"] - fwd["dur"],
                     bwd_end - bwd_start, opt - bwd_end, z2["ts"] + z2["dur"] - opt])
        end: dict = {}
        for e in sorted((e for e in cpu if bwd_start <= e["ts"] < bwd_end and e["tid"] != main),
                        key=lambda e: e["ts"]):
            if e["ts"] >= end.get(e["tid"], -1):  # the outermost entries of each thread
                hooks[e["name"][:70]] += e["dur"]
                end[e["tid"]] = e["ts"] + e["dur"]
        steps += 1
    med = [statistics.median(r[i] for r in rows) / 1e3 for i in range(6)]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    span = (max(e["ts"] + e["dur"] for e in kernels) - min(e["ts"] for e in kernels)) / 1e3 / 20
    nccl = [(e["ts"], e["ts"] + e["dur"]) for e in kernels if "nccl" in e["name"].lower()]
    comp = [(e["ts"], e["ts"] + e["dur"]) for e in kernels if "nccl" not in e["name"].lower()]
    out = [f"{trace.parent.name}: host per step (ms) prep {med[0]:.2f}, fwd {med[1]:.2f}, "
           f"loss {med[2]:.2f}, bwd {med[3]:.2f}, clip {med[4]:.2f}, opt {med[5]:.2f}; "
           f"sum {sum(med):.2f}",
           f"  GPU per step (ms): {span:.2f} from first to last kernel, compute kernels cover "
           f"{union_ms(comp) / 20:.2f}, NCCL {union_ms(nccl) / 20:.2f}",
           "  bwd, the autograd thread's largest entries (ms per step):"]
    for name, us in sorted(hooks.items(), key=lambda x: -x[1])[:3]:
        out.append(f"    {us / steps / 1e3:6.3f}  {name}")
    return "\n".join(out)


if __name__ == "__main__":
    for trace in sorted(Path(__file__).parent.glob("profiles/*/trace_rank0.json.gz")):
        print(analyse(trace))

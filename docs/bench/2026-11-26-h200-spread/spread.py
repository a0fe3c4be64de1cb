"""How far apart the same training step reads in separate processes, and why: each config is
trained ``reps`` times, each time in a spawned process of its own (as ``playground-bench table``
does), the configs interleaved. A process times every one of ``steps`` steps with CUDA events
(no synchronisation between steps) after the compile and ``warmup`` steps, then profiles 5 more
steps and keeps its 12 costliest GPU kernels, and the host's CPU time (steal included) over the
timed steps. Meanwhile nvidia-smi logs the SM clock, power and
throttle reasons every 200 ms (``smi.csv``), so a slow process can be told apart from a slow GPU.

    python3 spread.py '<common overrides>' 'label|overrides' ... [reps=3] [steps=60] [json=PATH]
"""
import json
import multiprocessing
import subprocess
import sys
import time


def _cpu_times():
    """The host's CPU time so far (jiffies, all cores), from /proc/stat; ``steal``: time the VM's
    cores waited for the physical host."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    return dict(zip(("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"), fields))


def child(overrides, steps, warmup, queue):
    import torch
    from torch.profiler import ProfilerActivity, profile

    from playground.bench.measure import _training_step

    try:
        cfg, device, model, one_step, _task, _workers = _training_step(overrides.split(), "fixed")
        tic = time.perf_counter()
        one_step()
        torch.cuda.synchronize()
        first = time.perf_counter() - tic
        for _ in range(warmup):
            one_step()
        torch.cuda.synchronize()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(steps)]
        stat = _cpu_times()
        tic = time.perf_counter()
        for start, end in events:
            start.record()
            one_step()
            end.record()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - tic) / steps
        cpu = {k: v - stat[k] for k, v in _cpu_times().items()}  # the host's CPU time during the timed steps
        ms = [s.elapsed_time(e) for s, e in events]
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                one_step()
            torch.cuda.synchronize()
        kernels = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
        kernels.sort(key=lambda e: e.self_device_time_total, reverse=True)
        top = [{"name": e.key[:120], "us_per_step": e.self_device_time_total / 5, "calls": e.count / 5}
               for e in kernels[:12]]
        total = sum(e.self_device_time_total for e in kernels) / 5 / 1e3
        queue.put({"first_step_s": first, "wall_ms": wall * 1e3, "step_ms": ms,
                   "kernel_ms_per_step": total, "top": top,
                   "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
                   "kernels": model.kernel_paths(device), "host_cpu_jiffies": cpu})
    except BaseException as err:  # noqa: BLE001
        queue.put({"error": f"{type(err).__name__}: {err}"[:500]})


def main():
    opts = dict(a.split("=", 1) for a in sys.argv[1:] if a.split("=", 1)[0] in ("reps", "steps", "json"))
    args = [a for a in sys.argv[1:] if a.split("=", 1)[0] not in ("reps", "steps", "json")]
    reps, steps, path = int(opts.get("reps", 3)), int(opts.get("steps", 60)), opts.get("json")
    common, configs = args[0], args[1:]
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,"
                            "utilization.gpu,clocks_throttle_reasons.active", "--format=csv,noheader", "-lms", "200"],
                           stdout=open((path or "spread.json") + ".smi.csv", "w"))
    ctx = multiprocessing.get_context("spawn")
    out = []
    try:
        for rep in range(reps):
            for config in configs:
                label, overrides = config.split("|")
                queue = ctx.Queue()
                began = time.time()
                proc = ctx.Process(target=child, args=(f"{common} {overrides}", steps, 5, queue))
                proc.start()
                res = {"label": label, "rep": rep, "began": began, **queue.get()}
                proc.join()
                res["ended"] = time.time()
                out.append(res)
                if "step_ms" in res:
                    ms = sorted(res["step_ms"])
                    print(json.dumps({"label": label, "rep": rep, "wall_ms": round(res["wall_ms"], 2),
                                      "median_ms": round(ms[len(ms) // 2], 2), "min_ms": round(ms[0], 2),
                                      "max_ms": round(ms[-1], 2), "kernel_ms": round(res["kernel_ms_per_step"], 2)}),
                          flush=True)
                else:
                    print(json.dumps({"label": label, "rep": rep, "error": res.get("error")}), flush=True)
                if path:
                    with open(path, "w") as f:
                        json.dump(out, f, indent=1)
    finally:
        smi.terminate()


if __name__ == "__main__":
    main()

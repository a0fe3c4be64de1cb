"""Training steps side by side, each config in a spawned process of its own, with the module
constants it names set in that process first (what ``playground-bench train compare=`` cannot
vary: which fusions ``model.canon.backend=auto`` takes, a kernel's tile constants).

    python3 stepcompare.py '<common overrides>' 'label|module.NAME=value;...|overrides' ... [json=PATH]

A value is Python (a tuple: ("rope",)). Prints one JSON line per config, with step time over the
first config's, and writes the list to PATH."""
import ast
import importlib
import json
import multiprocessing
import sys


def child(sets, overrides, queue):
    for item in filter(None, sets.split(";")):
        target, value = item.split("=", 1)
        module, _, name = target.rpartition(".")
        mod, key = importlib.import_module(module), None
        if "[" in name:  # module.DICT[key]=value
            name, key = name[:-1].split("[")
        if key is None:
            setattr(mod, name, ast.literal_eval(value))
        else:
            getattr(mod, name)[ast.literal_eval(key)] = ast.literal_eval(value)
    from playground.bench.measure import train_speed
    try:
        queue.put(train_speed(overrides.split(), 20, 10))
    except BaseException as err:  # noqa: BLE001
        queue.put({"error": f"{type(err).__name__}: {err}"[:500]})


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("json=")]
    path = next((a[5:] for a in sys.argv[1:] if a.startswith("json=")), None)
    common, configs = args[0], args[1:]
    ctx = multiprocessing.get_context("spawn")
    out = []
    for config in configs:
        label, sets, overrides = config.split("|")
        queue = ctx.Queue()
        proc = ctx.Process(target=child, args=(sets, f"{common} {overrides}", queue))
        proc.start()
        res = queue.get()
        proc.join()
        res = {"label": label, "sets": sets, **res}
        if "step_s" in res and out and "step_s" in out[0]:
            res["x_first"] = res["step_s"] / out[0]["step_s"]
        out.append(res)
        keep = ("label", "step_s", "tokens_per_s", "mfu", "peak_memory_gib", "x_first", "first_step_s", "error")
        print(json.dumps({k: res[k] for k in keep if k in res}), flush=True)
    if path:
        with open(path, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

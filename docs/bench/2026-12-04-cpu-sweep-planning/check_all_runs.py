import yaml, collections
from pathlib import Path
from playground.config import Composer
from playground.errors import ConfigError
from playground.run.train import checked_config
from playground.run.rundir import locate
from playground.sweep.spec import load_sweep, find_sweep_file
bad = collections.Counter()
for path in sorted(Path(find_sweep_file("fig7")).parent.glob("*.yaml")):
    if "findings" in yaml.safe_load(path.read_text()): continue
    for scale in yaml.safe_load(path.read_text())["scales"]:
        comp = Composer(); n = 0
        for r in load_sweep(path, scale).runs():
            try:
                c = comp(r); locate(c); checked_config(c)
            except ConfigError as e:
                bad[(path.stem, scale, str(e)[:160])] += 1
            n += 1
        print(path.stem, scale, n, flush=True)
for k, v in bad.items(): print(v, k)

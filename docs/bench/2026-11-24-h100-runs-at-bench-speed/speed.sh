# Bench vs real run, same config: the mini recipe (Depo1 K=4 N=25, 8L512D, context 512, batch 64, compiled).
# usage: bash .gpu/speed.sh NAME STEPS overrides...
name=$1; steps=$2; shift 2
mkdir -p $OUT
python3 -m playground.bench.cli train "$@" data=fixed steps=30 warmup=10 json=$OUT/bench_${name}_fixed.json > $OUT/bench_${name}.log 2>&1
python3 -m playground.bench.cli train "$@" data=real steps=60 warmup=10 json=$OUT/bench_${name}_real.json >> $OUT/bench_${name}.log 2>&1
python3 -m playground.run.train "$@" train.steps=$steps train.warmup_steps=10 train.eval_every=0 train.ckpt_every=100000 \
  train.log_every=50 train.progress=false wandb.mode=disabled out_dir=/tmp/run_$name > $OUT/run_${name}.log 2>&1
cp /tmp/run_$name/metrics.jsonl $OUT/metrics_${name}.jsonl
python3 - "$name" <<'PY'
import json, sys, os
name = sys.argv[1]; out = os.environ["OUT"]
fixed = json.load(open(f"{out}/bench_{name}_fixed.json"))[0]; real = json.load(open(f"{out}/bench_{name}_real.json"))[0]
logs = [json.loads(l) for l in open(f"{out}/metrics_{name}.jsonl") if '"train"' in l]
steady = [r["tokens_per_s"] for r in logs[2:]]
run = sorted(steady)[len(steady) // 2]
print(f"{name}: bench fixed {fixed['tokens_per_s']:,.0f} tok/s; bench real {real['tokens_per_s']:,.0f} (workers {real['loader_workers']}); "
      f"run median {run:,.0f} ({run / fixed['tokens_per_s']:.2f} of fixed)")
PY

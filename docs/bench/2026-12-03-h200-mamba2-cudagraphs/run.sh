# One device call (kind nvidia-h200, carry .whl): the spread of spread.py, then two runs alone, 700 steps each:
# Mamba2 with its conv1d (R8's `mamba2`) and GDN + Canon-ABCD (R10's `gdn_canon`), Depo1 mini config.
export PYTHONUNBUFFERED=1 WANDB_MODE=disabled
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $OUT/gpu.txt
(while sleep 5; do echo "$(date +%T) $(nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader)" >> $OUT/smi.csv; done) &
timeout 200 python3 docs/bench/2026-12-03-h200-mamba2-cudagraphs/spread.py > $OUT/spread.txt 2>&1; echo "rc $?" >> $OUT/spread.txt
common="train=paper train.compile=True task=depo1 task.K=4 task.context=512 train.batch_size=64 train.steps=700
 train.warmup_steps=200 train.eval_every=10000 train.ckpt_every=10000 train.log_every=50 task.eval_size=512 task.N=15
 size=8L512D seed=1 train.lr=0.001"
echo "mamba2 start $(date +%T)" >> $OUT/smi.csv
timeout 140 playground-train $common model=mamba2 mixer=mamba2 canon=none train.compile_mode=reduce-overhead out_dir=/tmp/m2 > $OUT/train_mamba2.txt 2>&1; echo "train rc $?" >> $OUT/train_mamba2.txt
cp /tmp/m2/summary.json $OUT/summary_mamba2.json
echo "gdn start $(date +%T)" >> $OUT/smi.csv
timeout 150 playground-train $common mixer=gdn_noconv canon=ABCD out_dir=/tmp/gdn > $OUT/train_gdn.txt 2>&1; echo "train rc $?" >> $OUT/train_gdn.txt
cp /tmp/gdn/summary.json $OUT/summary_gdn.json

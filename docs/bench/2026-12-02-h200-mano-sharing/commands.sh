# 2026-12-02, nvidia-h200, the 249 s of device time left after ../2026-12-02-h200-r5-brevo1/ (a fresh machine; .whl
# carried as there). Code: commit f8f71fe. One call, then give_back:
#   run kind=nvidia-h200 carry=[".whl"] timeout_s=240:
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site \
  && python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null \
  && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $OUT/gpu.txt
python3 -m playground.bench.cli train task=mano task.L=4 task.context=256 size=8L512D train=paper train.batch_size=64 \
  train.compile=true mixer=rope_quarter canon=ABCD copies=1,2,4 steps=30 warmup=5 blocks=2 json=$OUT/bench.json 2>&1 \
  | grep -v '^ \|^\[\|^\]\|^{\|^}' | tee $OUT/bench.txt

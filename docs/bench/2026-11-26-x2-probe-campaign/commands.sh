# Results 2, 3a, 3c and 10 at the probe cells (issue: the paper's results, tested), and how many runs share
# one H100 best; 2026-11-26, one hold of nvidia-h100-x2. runs.json: 18 runs picked from
#   playground-sweep findings scale=mini root=results/mini/runs launcher=local dry_run=true
# plan.json: each GPU's slots (4 per GPU), each slot's runs in order. The code ran from `git archive HEAD`
# (commit 1b56933) plus this folder, carried as .whl/head.tar with the wheels (hydra-core, omegaconf, antlr4,
# nltk, defusedxml, fla-core 0.6.0, einops 0.8.2, mamba_ssm 2.3.2.post1 built with MAMBA_SKIP_CUDA_BUILD=TRUE).
mkdir -p /tmp/head && tar xf .whl/head.tar -C /tmp/head
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1; cd /tmp/head
python3 -m pip install -q --no-deps --no-build-isolation -e .
B=docs/bench/2026-11-26-x2-probe-campaign
setsid nohup python3 $B/campaign.py /tmp/runs 1000 1 > /tmp/runs/campaign.log 2>&1 < /dev/null &   # GPU 1 waits
M="task=depo1_K4 task.context=512 task.N=15 size=8L512D train=paper train.batch_size=64 train.compile=true mixer=rope canon=ABCD"
CUDA_VISIBLE_DEVICES=1 python3 -m playground.bench.cli train $M copies=1,2,3,4,6 json=$OUT/copies.json        # copies.txt
CUDA_VISIBLE_DEVICES=1 python3 -m playground.bench.cli train $M \
  compare="train.compile_mode=default | train.compile_mode=reduce-overhead" json=$OUT/compile_mode.json        # compile_mode.txt
touch /tmp/runs/.gpu1.go                                                                                   # GPU 1's slots start
python3 $B/poll.py /tmp/runs $OUT        # each later call (sleep 470-480 s first); tars the finished runs
# locally: the finished runs' records copied into results/mini/runs/{fig7_mini,probe_mini}/, then
playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md

# Data-parallel scaling, the paper cell's go/no-go, and the fallback probe campaign; 2026-11-26, one hold of
# nvidia-h200-x4 (asked for nvidia-h100-x4; 4 x H200, 64 cores), 1,443 s held, then 3 short calls on a second
# hold (all-reduce, optimize_ddp). Code: `git archive HEAD` (commit 69b9074) plus this folder,
# carried as .whl/head.tar with the wheels (hydra-core, omegaconf, antlr4, nltk, defusedxml, fla-core 0.6.0,
# einops 0.8.2, mamba_ssm 2.3.2.post1 as plain Python).
mkdir -p /tmp/head /tmp/runs/report && tar xf .whl/head.tar -C /tmp/head
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1; cd /tmp/head
python3 -m pip install -q --no-deps --no-build-isolation -e .
B=docs/bench/2026-11-26-x4-paper-cell
setsid nohup python3 $B/drive.py /tmp/runs /tmp/runs/report 1530 1e-3 > /tmp/runs/drive.log 2>&1 < /dev/null &
# each later call: sleep ~570 s, then
python3 docs/bench/2026-11-26-x2-probe-campaign/poll.py /tmp/runs $OUT; cp /tmp/runs/report/* $OUT/
# drive.py wrote scaling.jsonl and drive.jsonl; the campaign (fallback_runs.json on fallback_plan.json) campaign.log.

# diagnostics (diagnostics.txt), same machine after drive.py ended:
M="task=depo1_K4 task.context=512 task.N=15 train=paper train.batch_size=64 train.warmup_steps=200 train.lr=1e-3
   task.eval_size=64 train.steps=300 train.log_every=50 train.eval_every=0 train.ckpt_every=100000 mixer=rope
   canon=ABCD size=8L512D"
CUDA_VISIBLE_DEVICES=0 torchrun --nproc_per_node=1 -m playground.run.train $M train.compile=false out_dir=/tmp/diag/nc_w1 &
CUDA_VISIBLE_DEVICES=1,2 torchrun --nproc_per_node=2 -m playground.run.train $M train.compile=false out_dir=/tmp/diag/nc_w2 &
CUDA_VISIBLE_DEVICES=3 python3 -m playground.run.train $M train.compile=false out_dir=/tmp/diag/nc_plain &
# cProfile: torchrun --no-python sh prof.sh $M train.compile=true train.steps=500, where prof.sh is
#   exec python3 -m cProfile -o /tmp/prof_${TAG}_$LOCAL_RANK.out -m playground.run.train "$@"
# optimize_ddp=False: torchrun --nproc_per_node=2 --no-python python3 noddp.py $M train.compile=true train.steps=400,
#   noddp.py: torch._dynamo.config.optimize_ddp = False, then runpy.run_module("playground.run.train")
# all-reduce and topology (allreduce.txt, topo.txt):
nvidia-smi topo -m; for w in 2 4; do NCCL_DEBUG=INFO torchrun --nproc_per_node=$w $B/allreduce.py; done

# 2026-11-28, the 2-core development machine (no GPU). Before: commit 8bb08d9 (the swap in the
# training thread) checked out at /tmp/before; after: the commit of this folder. Each pair
# alternates before and after; OMP_NUM_THREADS=1 as torchrun sets it for several processes.
git worktree add /tmp/before 8bb08d9
for world in 2 4; do for i in 1 2; do
  PYTHONPATH=/tmp/before OMP_NUM_THREADS=1 python docs/bench/2026-11-28-cpu-round-ahead/stall.py $world 300 20 cfg3f
  OMP_NUM_THREADS=1 python docs/bench/2026-11-28-cpu-round-ahead/stall.py $world 300 20 cfg3f
done; done > docs/bench/2026-11-28-cpu-round-ahead/stall.jsonl

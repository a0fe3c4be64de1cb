# Results 2 and 3a at the probe cells (issue: the paper's results, tested), fig7 mini protocol, 8L512D.
# runs.json: the runs not yet in results/mini/runs/fig7_mini, in priority tiers (1: Result 2's third seeds;
# 2: Lano NoPE +/- Canon; 3: Mano NoPE +/- Canon; 4: Depo1 NoPE +/- Canon seeds 1-2), made from
#   playground-sweep fig7 scale=mini panels=P variants=V seed=0,1,2 size=8L512D root=results/mini/runs dry_run=true
# Device (one hold): install, start every run of tiers <= 3 at once in the background, poll, collect.
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e .
setsid nohup python3 docs/bench/2026-11-26-x2-results-campaign/campaign.py 3 2 10 /tmp/runs > /tmp/campaign.log 2>&1 &
python3 docs/bench/2026-11-26-x2-results-campaign/poll.py /tmp/runs   # each poll
(cd /tmp/runs && tar czf $OUT/runs.tgz --exclude=checkpoints fig7_mini)   # at the end; runs copied into results/mini/runs/
# Second hold (nvidia-h100-x1): the same install lines, then
setsid nohup python3 docs/bench/2026-11-26-x2-results-campaign/campaign.py 1 1 2 /tmp/runs runs_depo1_seed2.json > /tmp/campaign.log 2>&1 &

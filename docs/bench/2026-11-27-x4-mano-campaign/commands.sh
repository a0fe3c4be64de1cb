# Mano L = 4 probe runs for Results 3b, 4, 5 (and 6's GLA as filler), 2026-11-27, one hold of
# nvidia-h100-x4 (4 x H200 given). Code: commit 3cc9890 as .whl/head.tar, carried with the wheels:
git archive HEAD playground conf sweeps pyproject.toml README.md docs/bench/2026-11-27-x4-mano-campaign > .whl/head.tar
# runs.json: the Mano runs of
#   playground-sweep findings scale=mini root=results/mini/runs launcher=local dry_run=true per_gpu=4
# for the 12 Llama variants of Results 3b, 4, 5 (seeds 0-2), then GLA's four Mano variants.
# Device calls (run tool, kind nvidia-h100-x4, carry [.whl]), each within the 30-s warm window:
bash docs/bench/2026-11-27-x4-mano-campaign/hold.sh setup 560 1650   # installs, starts campaign.py
bash docs/bench/2026-11-27-x4-mano-campaign/hold.sh poll 580
bash docs/bench/2026-11-27-x4-mano-campaign/hold.sh poll 592         # cut at the hold's end (rc 124)
# locally: records into results/mini/runs/probe_mini/, then
playground-report findings results/mini/runs out=results/mini/findings update=README.md,results/mini/README.md
playground-report site results/mini/runs out=docs/site
python docs/bench/2026-11-26-cost-estimate/check.py results/mini/runs > docs/bench/2026-11-26-cost-estimate/check.txt

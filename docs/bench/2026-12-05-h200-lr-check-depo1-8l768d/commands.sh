# Device calls, in order (kind nvidia-h200, carry .whl), 2026-12-05, code 3d707ba (the records' git_sha reads 77d8afd,
#   dirty: the machine's copy carried 3d707ba's files over the older commit; nothing else differed). The wheels in
#   .whl: as docs/bench/2026-12-04-h200-r10-mamba2-brevo1/commands.sh makes them.
# Dry run here first: ... gpus=1 per_gpu=3 margin=1.0 deadline=990 dry_run=true: 2 of 3 runs start (N = 10, 15),
#   the last ending at 713 s at their estimates; N = 20 left.
# Seven calls for a machine (03:57-05:13 UTC) got none (631 s of budget together: 1,800 → 1,169 s); the eighth (05:23)
#   started one, after ≈ 12 min (the start counted in the hold).
bash docs/bench/hold.sh start 597 1099 fig7 scale=mini panels=depo1_K4 size=8L768D variants=llama_rope \
  train.lr=5.0e-4 root=results/mini/lr_check per_gpu=3 margin=1.0
bash docs/bench/hold.sh poll 430   # at once after the answer; the launch ended inside it (159 s)
# give_back (307 s of budget left). Then, here: tar xzf runs.tgz of the last call; the logs of logs.tgz into logs/.
#   python docs/bench/2026-11-26-cost-estimate/check.py results/mini/lr_check   # 0.20 GPU-h measured, 0.20 est.

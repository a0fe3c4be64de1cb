# 2026-11-28. Code: the commit of this folder (the working tree travels); the wheels carried in .whl
# (fla-core 0.6.0, hydra-core 1.3.2, omegaconf 2.3.0, antlr4-python3-runtime 4.9.3, nltk 3.9.1,
# mamba_ssm 2.3.2.post1, einops 0.8.1) and the code before the round of shards built ahead:
git archive 8bb08d9 playground conf pyproject.toml > .whl/old.tar
# Hold 1, kind nvidia-h100-x2 (run tool, carry [.whl], timeout_s 600): the two calls and the give-back
# issued together, one batch of tool calls:
bash docs/bench/2026-11-28-round-ahead-and-mano-gla/hold.sh start 585 740 scaling
bash docs/bench/2026-11-28-round-ahead-and-mano-gla/hold.sh poll 155
# Hold 2, kind nvidia-h100-x1 (carry [.whl], timeout_s 600), the three calls issued together:
bash docs/bench/2026-11-28-round-ahead-and-mano-gla/hold.sh start 585 1640 findings
bash docs/bench/2026-11-28-round-ahead-and-mano-gla/hold.sh poll 585
bash docs/bench/2026-11-28-round-ahead-and-mano-gla/hold.sh poll 500    # cut at 122 s
# after each hold's last call, in the same batch: give_back. Hold 2's third call was cut at 122 s: the budget
# ran out (the one-GPU machine counted its whole held time).

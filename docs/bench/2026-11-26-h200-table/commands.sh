# The performance table, 2026-11-26: hold 4 of docs/bench/2026-11-26-h200-norm-canon/commands.sh.
# One NVIDIA H200 (gpu.txt), torch 2.11.0+cu130, Triton 3.6.0, fla-core 0.6.0, mamba_ssm 2.3.2.post1, commit 6628cde,
# from the repository root. Each cell in a spawned process of its own. The command ran in the background of one
# device call and ended with it after 14 cells (571 s): mini and 12L768D whole, 8L512D's Llama rows.
python3 -m playground.bench.cli table rows=llama,llama_canon,gla,gla_canon,mamba2,mamba2_canon cols=mini,12L768D,8L512D,8L768D,12L512D \
  json=table.json md=table.md
# To finish it (cells already in table.json are skipped), one column per device call, in the foreground:
#   python3 -m playground.bench.cli table rows=llama,llama_canon,gla,gla_canon,mamba2,mamba2_canon cols=8L512D \
#     json=docs/bench/2026-11-26-h200-table/table.json md=docs/bench/2026-11-26-h200-table/table.md
#   ... cols=8L768D ..., then cols=12L512D
# Finished in a later hold (2026-11-26, commit 0d372b1, NVIDIA H200, driver 580.159.04; see also
# ../2026-11-26-h200-spread/commands.sh's hold 1): cols=8L512D,8L768D in one call (10 cells, 319 s), then
# cols=8L768D,12L512D (6 cells), each with json=/tmp/table.json seeded from this file. All 30 cells are now here.
# The table was then measured again with blocks=3: ../2026-11-26-h200-table-blocks/ (the one docs/PERFORMANCE.md shows).

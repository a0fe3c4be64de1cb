# The performance table, 2026-11-26: one NVIDIA H200 (gpu.txt), torch 2.11.0+cu130, Triton 3.6.0,
# fla-core 0.6.0, mamba_ssm 2.3.2.post1, from the repository root. Each cell in a spawned process of its own; its step
# time is the fastest of blocks=3 blocks of 20 steps (block_step_s in the JSON).
#
# Hold 2 (commit 28fca34; the GLA rows then compiled without CUDA graphs), two device calls of the same command
# (the second one skipped the cells the first had written): -> table_without_graphs.json
python3 -m playground.bench.cli table rows=llama,llama_canon,gla,gla_canon,mamba2,mamba2_canon \
  cols=mini,12L768D,8L512D,8L768D,12L512D blocks=3 json=/tmp/table3.json md=/tmp/table3.md
# Hold 4 (the GLA rows with CUDA graphs, as BACKBONES now has them; the call ended on its time limit after 8 of 10
# cells, so 12L512D's GLA cells stay without CUDA graphs): -> table_gla_graphs.json
python3 -m playground.bench.cli table rows=gla,gla_canon cols=mini,12L768D,8L512D,8L768D,12L512D blocks=3 \
  json=table_gla_graphs.json
# table.json / table.md: table_without_graphs.json with table_gla_graphs.json's cells in place of its own, the ratios
# recomputed (playground.bench.measure._with_ratios) and the markdown written by measure.table_markdown.

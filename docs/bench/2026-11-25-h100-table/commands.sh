# One NVIDIA H100 80GB HBM3 per hold (three holds, 2026-11-25), torch 2.11.0+cu130, Triton 3.6.0, fla-core 0.6.0,
# from the repository root, nothing else on the GPU. Which code ran is said per line.
#
# table.json / table.md — the performance table, merged from three holds (each cell's "measured" field says which):
#   Llama and GLA ± Canon-ABCD, every column: hold 3, commit 4a11382 (backend auto = the plain Canon kernel)
python3 -m playground.bench.cli table rows=llama,llama_canon,gla,gla_canon json=table_h3.json md=table_h3.md
#   GDN and Mamba2 rows: holds 1 and 2, commit 8436b04 (these rows do not use the fused Canon kernels, except the
#   GDN + Canon MLP's Canon-D), their x_llama against the Llama cell of their own hold
python3 -m playground.bench.cli table cols=mini,12L768D json=table.json        # hold 1 (stopped after 13 cells)
python3 -m playground.bench.cli table rows=llama,llama_canon,gla,gla_canon,mamba2,mamba2_canon json=table.json   # hold 2
#   not measured: GDN at 8L512D, 8L768D, 12L512D and GDN + Canon at those and 12L768D — compiling the PyTorch
#   chunked GDN path at context 2048 took about 7 minutes per cell (fla's gated backward is refused on Hopper, Triton 3.6)
#
# profile.txt — hold 2, commit 8436b04 (there "auto" = fused kernels, "unfused" = plain kernel = today's auto)
python3 docs/bench/2026-11-25-h100-table/prof_step.py mini:none mini:ABCD mini:ABCD:model.canon.backend=unfused \
  12L768D:none 12L768D:ABCD 12L768D:ABCD:model.canon.backend=unfused
# fusetune.jsonl — hold 2, commit 8436b04: the fused kernels alone against the plain Canon kernel, over tile constants
python3 docs/bench/2026-11-25-h100-table/fusetune.py > fusetune.jsonl
# table_llama_rope_unfused.json — hold 2: Llama ± Canon at mini and 12L768D with Canon-B+RoPE off, Canon-D+SwiGLU on
python3 -m playground.bench.cli table rows=llama,llama_canon cols=mini,12L768D json=table_llama_rope_unfused.json
# compile_scope_mini.json — hold 2, working tree after a29e94c (train.compile_scope), Canon-B+RoPE off, Canon-D+SwiGLU on;
# the "model" config's first step found inductor's cache warm (the same model was compiled earlier in that hold)
python3 -m playground.bench.cli train task=depo1_K4 task.context=512 task.N=25 size=8L512D train=paper train.batch_size=64 \
  canon=ABCD train.compile=true compare="train.compile_scope=model | train.compile_scope=blocks"
# generate.json — hold 2 (agree_cached added); generate_hold1.json — hold 1, the same command
python3 -m playground.bench.cli generate task=brevo1 task.N=110 size=12L768D canon=none count=1000 batch_size=256 modes=graph,cached
# gpu_tests.txt — the GPU tests of these holds

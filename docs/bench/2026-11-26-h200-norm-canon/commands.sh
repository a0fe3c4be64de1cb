# 2026-11-26: Canon-A/C fused with RMSNorm (playground::norm_canon) and the table's isolation.
# One NVIDIA H200 (143,771 MiB, driver 580.159.04) per hold, torch 2.11.0+cu130, Triton 3.6.0, fla-core 0.6.0,
# mamba_ssm 2.3.2.post1 as plain Python; the working tree run from the repository root (PYTHONPATH=$PWD).
# Which code each line ran is said per hold. A command started in the background of a device call ends with
# that call: run long work in the foreground of calls of at most 10 minutes.
D=docs/bench/2026-11-26-h200-norm-canon
NO='playground.layers.canon.FUSIONS["auto"]=("rope",)'   # auto without the norm fusion
MINI="task=depo1_K4 task.context=512 task.N=25 size=8L512D train=paper train.batch_size=64 train.compile=true model=llama mixer=rope"
B="task=depo1 size=12L768D train.batch_size=16 model=llama train.compile=true"

# hold 1 — the first version (whole rows per program, rstd inside) before its own strip constants (not committed):
python3 -m pytest -q -m gpu tests/test_kernels.py -k "norm_canon or block_with_fused or compiles_without_graph_breaks"   # 20 passed
#   (its tuning run was superseded by hold 2's, which searched the strip constants too)

# hold 2 — the same version with its own strip constants, commit 253619e:
BEST='playground.kernels.norm_canon_triton.FWD_ELEMS=4096;playground.kernels.norm_canon_triton.FWD_WARPS=4;playground.kernels.norm_canon_triton.BWD_ELEMS=2048;playground.kernels.norm_canon_triton.BWD_WARPS=4;playground.kernels.norm_canon_triton.BWD_STAGES=3;playground.kernels.norm_canon_triton.BWD_PROGRAMS_PER_SM=8;playground.kernels.norm_canon_triton.BWD_MIN_STRIP=32'   # normtune_rows.py's last line
python3 $D/normtune_rows.py > normtune_rows.jsonl     # forward 74 / 154 us, backward 137 / 217 us at best (mini / 12L768D)
python3 $D/stepcompare.py "$MINI" "llama||canon=none" "abcd_no_norm|$NO|canon=ABCD" "abcd_norm|$BEST|canon=ABCD" json=h2_rows_mini.json
#   llama 18.51 ms; abcd_no_norm 30.90 (x1.669), 8.40 GiB; abcd_norm 30.61 (x1.653), 7.43 GiB
python3 $D/stepcompare.py "$B" "llama||mixer=rope canon=none" "abcd_no_norm|$NO|mixer=rope canon=ABCD" "abcd_norm|$BEST|mixer=rope canon=ABCD" \
  "gla_canon_no_norm|$NO|mixer=gla canon=ABCD" "gla_canon_norm|$BEST|mixer=gla canon=ABCD" json=h2_rows_12L768D.json
#   llama 55.46 ms; abcd x1.237 (19.15 GiB) / x1.249 (16.95 GiB); gla_canon x1.919 (19.85 GiB) / x1.739 (17.59 GiB)

# hold 3 — the channel-block version, commit df04fc4 (the kernel as in the final code):
python3 -m pytest -q -m gpu tests/test_kernels.py -k "norm_canon or block_with_fused or compiles_without_graph_breaks"   # 20 passed
python3 $D/normtune.py > normtune.jsonl               # unfused 297.1 / 588.7 us, fused 259.1 / 402.4 us (fwd + bwd, GPU time)
python3 $D/stepcompare.py "$MINI" "llama||canon=none" "abcd_no_norm|$NO|canon=ABCD" "abcd_norm||canon=ABCD" json=h3_mini.json
#   llama 18.63 ms; abcd_no_norm 26.89 (x1.443), 8.40 GiB; abcd_norm 28.47 (x1.528), 7.43 GiB
python3 $D/stepcompare.py "$B" "llama||mixer=rope canon=none" "abcd_no_norm|$NO|mixer=rope canon=ABCD" "abcd_norm||mixer=rope canon=ABCD" \
  "gla_canon_no_norm|$NO|mixer=gla canon=ABCD" "gla_canon_norm||mixer=gla canon=ABCD" json=h3_12L768D.json
#   llama 56.03 ms; abcd 69.47 (x1.240, 19.15 GiB) / 67.14 (x1.198, 16.95 GiB); gla_canon 92.11 (x1.644) / 96.28 (x1.718)

# hold 4 — commit 6628cde (norm in auto, the table isolated): docs/bench/2026-11-26-h200-table/ (14 of 30 cells, see there)
python3 -m playground.bench.cli table rows=llama,llama_canon,gla,gla_canon,mamba2,mamba2_canon cols=mini,12L768D,8L512D,8L768D,12L512D \
  json=table.json md=table.md

# hold 5 — 6628cde: the mini recipe again, with and without the norm fusion, twice, interleaved
python3 $D/stepcompare.py "$MINI" "llama||canon=none" "abcd_no_norm|$NO|canon=ABCD" "abcd_norm||canon=ABCD" "abcd_no_norm_2|$NO|canon=ABCD" \
  "abcd_norm_2||canon=ABCD" json=h5_mini_recheck.json
#   llama 18.63 ms; no_norm 25.14 (x1.349), 25.65 (x1.377); norm 27.29 (x1.465), 23.85 (x1.280); 8.40 / 7.43 GiB

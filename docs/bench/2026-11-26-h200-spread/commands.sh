# Why the same step read differently in different processes; CUDA graphs for GLA. 2026-11-26,
# one NVIDIA H200 (143,771 MiB, driver 580.159.04), torch 2.11.0+cu130, Triton 3.6.0, fla-core 0.6.0,
# mamba_ssm 2.3.2.post1, commit 0d372b1 (hold 1) and 28fca34 plus the working tree (holds 2-3), from the repository root.
S=docs/bench/2026-11-26-h200-spread
MINI="task=depo1_K4 task.context=512 task.N=25 size=8L512D train=paper train.batch_size=64 train.compile=true model=llama mixer=rope"
# hold 1, after the first table was finished (docs/bench/2026-11-26-h200-table/):
python3 $S/spread.py "$MINI" "llama|canon=none" "llama_canon|canon=ABCD" reps=2 steps=60 json=spread_mini.json
#   llama 19.08 / 18.79 ms a step (medians 18.91 / 18.51), llama_canon 25.59 / 25.02 (medians 23.98 / 24.03)
python3 $S/spread.py "task=depo1 size=12L768D train.batch_size=16" "llama|mixer=rope canon=none train.compile=true" \
  "mamba2|model=mamba2 mixer=mamba2 canon=none train.compile=true train.compile_mode=reduce-overhead" \
  "gla_canon|mixer=gla canon=ABCD train.compile=true" "llama_canon|mixer=rope canon=ABCD train.compile=true" \
  reps=1 steps=40 json=spread_12L768D.json
#   llama 55.53, mamba2 111.02, gla_canon 82.41, llama_canon 66.76 ms (wall per step)
for i in 1 2; do python3 -m playground.bench.cli table rows=llama,llama_canon cols=mini,12L768D json=retable_$i.json; done
#   (one block of 20 steps) mini x1.38 / x1.34, 12L768D x1.20 / x1.19
python3 -m playground.bench.cli table rows=llama,llama_canon,gla,gla_canon,mamba2,mamba2_canon cols=mini,12L768D \
  json=table_hold1_rerun.json
#   (one block) mini Llama + Canon x1.57; Mamba2 12L768D x2.04; Mamba2 + Canon mini x0.63 of its twin
# GPU tests on 0d372b1 -> gpu_tests.txt
(cd tests && python3 -m pytest -q -m gpu test_kernels.py; python3 -m pytest -q -m gpu test_gpu.py -k "not deterministic"
 python3 -m pytest -q -m gpu test_mixers_gpu.py -k "mixer_kernel_path or first_training_step")
# hold 3, after the blocks table of hold 2 (spread.py now also records the host's CPU time):
python3 $S/spread.py "task=depo1 train.batch_size=16" \
  "mamba2_12L768D|size=12L768D model=mamba2 mixer=mamba2 canon=none train.compile=true train.compile_mode=reduce-overhead" \
  "gla_8L512D|size=8L512D mixer=gla canon=none train.compile=true" reps=2 steps=60 json=spread_linear.json
for s in 8L512D 12L768D; do
  python3 -m playground.bench.cli train task=depo1 size=$s train.batch_size=16 mixer=gla canon=ABCD train.compile=true \
    compare="train.compile_mode=default | train.compile_mode=reduce-overhead" json=gla_graphs_$s.json
done   # x0.747 (8L512D), x0.790 (12L768D)
python3 -m playground.bench.cli train task=depo1 size=12L768D train.batch_size=16 train.compile=true \
  compare="mixer=rope canon=none | mixer=gla canon=ABCD train.compile_mode=reduce-overhead | mixer=gla canon=none train.compile_mode=reduce-overhead" \
  json=gla_graphs_vs_llama_12L768D.json   # x1.451, x1.246
# hold 4 (the same call as the GLA rows of ../2026-11-26-h200-table-blocks/): CUDA graphs train as the compiled model does -> gpu_tests_graphs.txt (2 passed)
(cd tests && python3 -m pytest -q -m gpu test_mixers_gpu.py -k cuda_graphs)

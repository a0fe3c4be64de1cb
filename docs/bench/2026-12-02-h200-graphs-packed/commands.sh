# 2026-12-02 07:51 UTC, nvidia-h200 (gpu.txt), torch 2.11.0+cu130, Triton 3.6.0; the working tree of commit 3afd8bf
# with the llama case of test_training_under_cuda_graphs_matches_compiled_training, and .whl carried.
# One device call (timeout_s=215; 146 s of wall time, the machine's start before it):
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e .
python3 -m pytest -q -m gpu tests/test_mixers_gpu.py -k "cuda_graphs and llama"                    # -> test.txt
python3 -m playground.bench.cli train task=mano task.context=256 task.L=4 size=8L512D train=paper \
  train.batch_size=64 train.compile=true mixer=rope canon=ABCD copies=4 blocks=2 \
  compare='train.compile_mode=default | train.compile_mode=reduce-overhead' json=bench.json       # -> bench.json

# The Canon strip backward against the per-tile one, 2026-11-24: one NVIDIA H200, torch 2.11.0+cu130, Triton 3.6.0,
# from the repository root. verify.sh is the script as run; these are its commands. "new" = the strip backward (the
# tree then), "old" = the kernel before it (git show 24611d2:playground/kernels/canon_triton.py and __init__.py,
# copied over playground/kernels/ between the two halves).
MINI="task=depo1 task.K=4 task.N=25 task.context=512 size=8L512D train=paper train.batch_size=64 train.compile=true"
python3 -m pytest -q -m gpu tests/test_gpu.py tests/test_kernels.py -k canon -p no:cacheprovider > gpu_tests.txt   # 34 passed
python3 -m playground.bench.cli canon json=canon_new.json
python3 -m playground.bench.cli train $MINI compare='canon=none | canon=ABCD' json=train_new.json
# ... with the old kernel in place:
python3 -m playground.bench.cli canon json=canon_old.json
python3 -m playground.bench.cli train $MINI compare='canon=none | canon=ABCD' json=train_old.json
# then (new kernel again) GDN vs GLA vs Llama at 12L768D: see ../2026-11-24-h200-gdn-gla-llama/
python3 -m playground.bench.cli train task=depo1 size=12L768D train.batch_size=16 \
  compare='mixer=rope train.compile=true | mixer=gla canon=none | mixer=gdn canon=none | mixer=gdn canon=ABCD' json=gdn_compare.json

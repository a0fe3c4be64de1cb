# What produced this folder (one H200, torch 2.11.0+cu130, Triton 3.6.0, 2026-11-24), from the
# repository root with the package installed; the runs of results/mini shared the GPU only after
# these had finished.
python3 docs/bench/2026-11-24-h200-canon-strips/tune.py > tune.jsonl   # sets the constants itself
playground-bench canon json=canon.json   # with BWD_PROGRAMS_PER_SM = 1
playground-bench train task=depo1_K4 task.context=512 task.N=25 size=8L512D train=paper \
  train.batch_size=64 compare='mixer=gdn canon=none | mixer=gdn canon=none train.compile=true' json=gdn_compile.json

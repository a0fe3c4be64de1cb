# One NVIDIA H200 (torch 2.11.0+cu130, Triton 3.6.0), 2026-11-25, from the repository root,
# before the 7 Lano runs of that hold started (nothing else on the GPU):
python3 -m playground.bench.cli canon batch=64 context=512 widths=512,1536,2688 json=canon_mini.json
python3 -m pytest -q -m gpu tests/test_gpu.py -k bench          # 1 passed
python3 docs/bench/2026-11-25-canon-tiles/tune.py > tune.jsonl  # 432 lines, about 70 s
# (the tuning ran with the forward tile of 64 rows; canon_mini.json too — both are "before" the change)

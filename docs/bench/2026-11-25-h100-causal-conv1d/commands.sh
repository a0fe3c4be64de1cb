# causal-conv1d 1.7.0 (the package of the paper's code) as a Canon backend, one NVIDIA H100 80GB HBM3,
# torch 2.11.0+cu130, Triton 3.6.0, nvcc 13.0, 2026-11-25, commit 9bdf7cc.
#
# Build (hold 1, beside six training runs: 4 compile jobs at nice 19 took 414 s). causal-conv1d's setup.py
# ignores TORCH_CUDA_ARCH_LIST and compiles for nine architectures (sm_75 ... sm_121 with CUDA 13); we
# restricted it to sm_90 with a two-line local patch of its setup.py, after the gencode list:
#     if os.getenv("CCD_ONLY_GENCODE"): cc_flag = ["-gencode", os.getenv("CCD_ONLY_GENCODE")]
# and built the sdist offline (no network on the device; FORCE_BUILD skips the prebuilt-wheel download):
CAUSAL_CONV1D_FORCE_BUILD=TRUE CCD_ONLY_GENCODE=arch=compute_90,code=sm_90 MAX_JOBS=4 \
  python3 -m pip wheel --no-deps --no-build-isolation --no-index -w /tmp/ccdwheel ./causal_conv1d-1.7.0
# (the wheel: 25.9 MB, sm_90 only)
#
# GPU test (hold 1, beside the runs): 12 passed — gpu_tests.txt
python3 -m pytest -q -m gpu tests/test_kernels.py -k causal_conv1d
#
# Benchmarks (hold 2, nothing else on the GPU, before that hold's runs started):
playground-bench canon widths=512,768,1536,2304,4096 json=canon_2048.json
playground-bench canon batch=64 context=512 widths=512,1536,2688 json=canon_mini.json
playground-bench train task=depo1_K4 task.context=512 task.N=25 size=8L512D train=paper train.batch_size=64 canon=ABCD \
  train.compile=true compare='model.canon.backend=auto | model.canon.backend=causal_conv1d' json=ccd_mini.json
playground-bench train task=depo1 size=12L768D train.batch_size=16 canon=ABCD train.compile=true \
  compare='model.canon.backend=auto | model.canon.backend=causal_conv1d' json=ccd_12L768D.json

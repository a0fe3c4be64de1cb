# One NVIDIA H100 80GB HBM3 (2026-11-25), torch 2.11.0+cu130, Triton 3.6.0, mamba_ssm 2.3.2.post1
# installed as plain Python (MAMBA_SKIP_CUDA_BUILD=TRUE MAMBA_FORCE_BUILD=TRUE, docs/mixers.md) with einops 0.8.2,
# canon-playground at commit b6a5b01, from the repository root.
#
# gpu_test.txt — first hold, beside four training runs (a correctness test, not a timing):
python3 -m pytest -q -m gpu tests/test_mixers_gpu.py -k mamba_ssm
# mamba2_12L768D.json — second hold, on the idle GPU after its runs had finished (MPS daemon stopped first);
# 3 warm-up and 10 timed steps (the device time left allowed no more; the table uses 5 and 20):
playground-bench train task=depo1 size=12L768D train.batch_size=16 warmup=3 steps=10 \
  compare='model=llama mixer=rope canon=none train.compile=true | model=mamba2 mixer=mamba2 canon=none model.mixer.backend=mamba_ssm' \
  json=mamba2_12L768D.json

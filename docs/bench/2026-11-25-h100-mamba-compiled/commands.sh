# 2026-11-25, one NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, Triton 3.6.0,
# mamba_ssm 2.3.2.post1 installed as plain Python (no CUDA extensions); the GPU otherwise idle
# (CUDA MPS stopped first). JSON: mamba_compiled.json.
playground-bench train task=depo1 size=12L768D train.batch_size=16 \
  compare='model=llama mixer=rope canon=none train.compile=true | model=mamba2 mixer=mamba2 canon=none model.mixer.backend=mamba_ssm train.compile=true' \
  json=mamba_compiled.json
# printed:
#   ... model=llama mixer=rope canon=none train.compile=true      541,051 tok/s  MFU 40.3%  peak 12.8 GiB  x1.000
#   ... model=mamba2 ... model.mixer.backend=mamba_ssm train.compile=true      136,824 tok/s  MFU 7.3%  peak 24.5 GiB  x3.954
# A first try, five configurations in one compare (Llama compiled; Mamba2 on
# mamba_ssm eager and compiled; GLA + Canon-ABCD eager and compiled, where fla was not installed so
# GLA would have run its PyTorch path), printed nothing within its 300 s limit: compiling all five
# at 12L768D takes longer than that.

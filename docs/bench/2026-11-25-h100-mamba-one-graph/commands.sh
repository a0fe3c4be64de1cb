# 2026-11-25, one NVIDIA H100 80GB HBM3 (driver 580.159.04), torch 2.11.0+cu130,
# Triton 3.6.0, mamba_ssm 2.3.2.post1 installed as plain Python (no CUDA extensions); nothing else on
# the GPU. Code: the wheel of 4e24ee9 (after 539e24b: the kernel check and the autotune restriction
# are constants to torch.compile, the mamba_ssm import an import statement), carried with hydra-core
# 1.3.2, omegaconf 2.3.0, antlr4-python3-runtime 4.9.3 and einops 0.8.2 as wheels; one device call.
B="task=depo1 size=12L768D train.batch_size=16"
LL="model=llama mixer=rope canon=none train.compile=true"
M="model=mamba2 mixer=mamba2 canon=none model.mixer.backend=mamba_ssm train.compile=true"

# goal 3, side by side in one process (5 warm-up, 20 timed steps, one pre-made batch)
playground-bench train $B warmup=5 steps=20 compare="$LL | $M" json=mamba_compare.json
#   Llama compiled       533,975 tok/s  MFU 39.8%  peak 12.8 GiB  x1.000   (first step 33.7 s)
#   Mamba2, mamba_ssm    154,734 tok/s  MFU  8.3%  peak 24.5 GiB  x3.451   (first step 46.1 s)

# where its step goes (PyTorch profiler, 10 steps after 10)
playground-bench profile $B $M steps=10 warmup=10 top=25 json=mamba_profile.json
#   193.08 ms/step, 169,716 tokens/s; GPU kernels 151.58 ms/step (the GPU busy 79% of the wall)

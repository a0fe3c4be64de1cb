# 2026-11-25, one NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, Triton 3.6.0,
# fla-core 0.6.0, mamba_ssm 2.3.2.post1 installed as plain Python (no CUDA extensions); the GPU
# otherwise idle (CUDA MPS stopped). Code: the wheel of d062d05. Run one after another in one
# device call (.gpu/bench_all.sh); the last one in a later call of the same hold.
B="task=depo1 size=12L768D train.batch_size=16"
LL="model=llama mixer=rope canon=none train.compile=true"
M="model=mamba2 mixer=mamba2 canon=none model.mixer.backend=mamba_ssm train.compile=true"

# goal 3: Mamba2 on mamba_ssm's SSD, compiled, chunk 64 (ours) / 256 (mamba_ssm's default) / 128
playground-bench train $B compare="$LL | $M model.mixer.chunk=64 | $M model.mixer.chunk=256 | $M model.mixer.chunk=128" json=mamba_chunks.json
#   Llama compiled                  550,801 tok/s  MFU 41.0%  peak 12.8 GiB  x1.000
#   Mamba2, chunk 64                155,969 tok/s  MFU  8.3%  peak 24.5 GiB  x3.531
#   Mamba2, chunk 256               148,900 tok/s  MFU  7.9%  peak 24.3 GiB  x3.699
#   Mamba2, chunk 128               157,818 tok/s  MFU  8.4%  peak 24.3 GiB  x3.490
playground-bench profile $B $M model.mixer.chunk=128 top=25 json=mamba_profile.json
#   242.32 ms/step, 135,229 tokens/s; GPU kernels 135.30 ms/step (the GPU busy 56% of the wall)

# the profile command's GPU test
python3 -m pytest -q -m gpu tests/test_gpu.py -k step_profile      # 1 passed

# goal 4: GLA + Canon-ABCD on fla's kernels, eager and compiled (fla already imported by the eager variant)
playground-bench train $B compare="$LL | mixer=gla canon=ABCD | mixer=gla canon=ABCD train.compile=true" json=gla_compiled.json
#   Llama compiled                  553,367 tok/s  MFU 41.2%  peak 12.8 GiB  x1.000
#   GLA + Canon-ABCD, eager         250,162 tok/s  MFU 13.0%  peak 23.9 GiB  x2.212
#   GLA + Canon-ABCD, compiled      266,399 tok/s  MFU 13.8%  peak 19.9 GiB  x2.077
playground-bench profile $B mixer=gla canon=ABCD train.compile=true top=25 json=gla_profile.json
#   NOT a profile of fla's path: in this fresh process fla was first imported while dynamo traced the
#   model, its version check failed under dynamo ("fla is installed but does not import ...; using the
#   PyTorch path"), and GLA ran our PyTorch chunked path: 321.59 ms/step, 101,893 tokens/s. Fixed in
#   539e24b (the kernel check runs in plain Python under torch.compile; tests/test_mixers.py).

# goal 2: inductor's kernel search on Llama
playground-bench train $B $LL compare="train.compile_mode=default | train.compile_mode=max-autotune-no-cudagraphs" json=llama_autotune.json
#   default                         531,010 tok/s  MFU 39.6%  peak 12.8 GiB  x1.000
#   max-autotune-no-cudagraphs      535,836 tok/s  MFU 39.9%  peak 12.8 GiB  x0.991

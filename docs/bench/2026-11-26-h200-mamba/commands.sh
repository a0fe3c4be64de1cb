# 2026-11-26, one NVIDIA H200 (driver 580.159.04) per hold, torch 2.11.0+cu130, Triton 3.6.0,
# fla-core 0.6.0, mamba_ssm 2.3.2.post1 as plain Python; the working tree run from the repository root
# (PYTHONPATH=$PWD). Six holds (a hold = one machine start). The code changed between holds, per line:
#   [h1]  2cfe0ab (BWD_STAGES 1; Mamba2 fused_norm = mamba_ssm's gated norm + D inside its SSD)
#   [h2]  + BWD_STAGES 3 (plain) / FUSED_BWD_STAGES 1; our gated norm kernel (norm_backend auto = triton on CUDA)
#         with a broken fake (graph breaks: "fake tensor raised TypeError"); Mamba2's SiLU inside its conv kernel
#   [h3]  fake fixed; SiLU apart again; TUNED mamba_ssm candidates beside the two cheapest; x, B, C strided into
#         the SSD; BWD_STAGES 4
#   [h4]  + TUNED fla GLA candidates (from the first call of this hold)
#   [h5]  + torch._dynamo.reset / gc / empty_cache before each compare config (then taken out again)
#   [h6]  compare configs each in a spawned process (isolate); then TUNED = the one config (final code)
B="task=depo1 size=12L768D train.batch_size=16"
MINI="task=depo1_K4 task.context=512 task.N=25 size=8L512D train=paper train.batch_size=64 train.compile=true"
LL="model=llama mixer=rope canon=none train.compile=true"
M="model=mamba2 mixer=mamba2 canon=none model.mixer.backend=mamba_ssm train.compile=true train.compile_mode=reduce-overhead"

# ---- h1 ----
python3 -m pytest -q -m gpu tests/test_mixers_gpu.py -k "mixer_kernel_path and mamba_ssm"       # in gpu_tests_raw.txt
python3 stagetune.py > stagetune.jsonl          # every backward kernel, stages 1-4 x rows 8/16 x warps 4/8 (192 lines)
playground-bench train $B compare="$LL | $M | $M model.mixer.fused_norm=true" json=h1_mamba_fused_norm_mamba_ssm.json
#   $LL                              586,293 tok/s  MFU 43.7%  peak 12.8 GiB  x1.000
#   $M                               237,136 tok/s  MFU 12.7%  peak 24.4 GiB  x2.472
#   $M model.mixer.fused_norm=true   193,148 tok/s  MFU 10.3%  peak 22.3 GiB  x3.035
python3 -m pytest -q -m gpu tests/test_gpu.py -k "not deterministic"                               # 17 passed
playground-bench profile $B $M model.mixer.fused_norm=true steps=10 warmup=10 top=30 json=h1_mamba_fused_norm_profile.json
#   134.96 ms/step; GPU kernels 132.34 ms/step (busy 98%)

# ---- h2 ----
python3 -m pytest -q -m gpu tests/test_kernels.py                                                   # 63 passed, 12 skipped
python3 -m pytest -q -m gpu tests/test_mixers_gpu.py -k "mixer_kernel_path and mamba2"             # 4 passed, 2 skipped
python3 stageconfirm.py > stageconfirm.jsonl    # plain backward, stages 1/3/4, median of 5 interleaved rounds
python3 autotune.py restricted ssd_mamba; python3 autotune.py full ssd_mamba > autotune_ssd.jsonl
#   restricted 3474.1 us (first call 13.2 s); full 2929.1 us (first call 52.0 s): SSD forward + backward, one layer
playground-bench train $B compare="$LL | $M | $M model.mixer.norm_backend=torch" json=h2_goal3_fake_error.json
#   x2.687 / x3.011 (graph breaks from the broken fake; discarded)
playground-bench train $MINI compare='canon=none | canon=ABCD' json=h2_goal1_mini_stages3.json
#   canon=none 1,728,568 tok/s  MFU 30.6%  peak 5.6 GiB  x1.000;  canon=ABCD 1,062,027 tok/s  MFU 18.9%  peak 8.4 GiB  x1.628
playground-bench train $B model=llama mixer=rope train.compile=true compare='canon=none | canon=ABCD' json=h2_goal1_12L768D_stages3.json
#   canon=none 584,896 tok/s  MFU 43.6%  peak 12.8 GiB  x1.000;  canon=ABCD 471,504 tok/s  MFU 35.2%  peak 19.2 GiB  x1.240
playground-bench profile $B $M steps=10 warmup=10 top=30 json=h2_mamba_profile_silu_in_conv.json   # 165.7 ms/step, busy 82%

# ---- h3 ----
python3 -m pytest -q -m gpu tests/test_kernels.py -k "gated_norm or canon_triton_gpu"              # 38 passed
python3 -m pytest -q -m gpu tests/test_mixers_gpu.py -k "mixer_kernel_path and mamba2"             # 4 passed, 2 skipped
python3 autotune.py restricted ssd_mamba > autotune_ssd_tuned.jsonl   # 3741.7 us, first call 18.5 s (the tuned configs chosen)
playground-bench train $B compare="$LL | $M model.mixer.norm_backend=torch | $M" json=h3_goal3.json
#   $LL 597,441 tok/s x1.000;  norm torch 258,458 x2.312;  norm triton (auto) 274,642 x2.175 (first step 1.8 s: see PERFORMANCE)
playground-bench profile $B $M steps=10 warmup=10 top=40 json=h3_mamba_profile.json                # 102.63 ms/step, kernels 100.27 (busy 98%)
python3 -m pytest -q -m gpu tests/test_gpu.py -k "deterministic and mamba2"                        # 1 passed
playground-bench train $MINI compare='canon=none | canon=ABCD' json=h3_goal1_mini.json
#   canon=none 1,743,008 tok/s  MFU 30.8%  peak 5.6 GiB  x1.000;  canon=ABCD 1,321,594 tok/s  MFU 23.5%  peak 8.4 GiB  x1.319
playground-bench train $B model=llama train.compile=true compare='mixer=rope canon=none | mixer=rope canon=ABCD | mixer=gla canon=ABCD' json=h3_goal1_4_12L768D.json
#   Llama 599,213 x1.000;  + Canon-ABCD 485,563 (19.2 GiB) x1.234;  GLA + Canon-ABCD 360,680 (19.9 GiB) x1.661
playground-bench profile $MINI canon=ABCD steps=10 warmup=10 top=30 json=h3_mini_profile.json      # 25.46 ms/step, kernels 23.42 (busy 92%)

# ---- h4 ----
python3 autotune.py restricted gla_fla; python3 autotune.py full gla_fla > autotune_gla.jsonl
#   restricted 1970.6 us (first call 18.0 s); full 2060.1 us (first call 292.4 s)
playground-bench train $B compare="$LL | $M" json=h4_goal3.json                                      # x2.130, 22.1 GiB
playground-bench train $B compare="$LL | $M model.mixer.norm_backend=torch" json=h4_goal3_norm_torch.json   # x2.030, 22.1 GiB
python3 -m pytest -q -m gpu tests/test_gpu.py -k "not deterministic"                               # 17 passed
python3 -m pytest -q -m gpu tests/test_mixers_gpu.py -k first_training_step                        # 2 passed, 1 skipped: mamba2 35.1 s, gla 27.6 s
playground-bench train $B compare="$LL | $M" warmup=15 steps=30 json=h4_goal3_warm15.json           # 582,852 / 287,788 tok/s: x2.025
playground-bench train $B compare="$LL | mixer=gla canon=ABCD train.compile=true | mixer=gla canon=none train.compile=true" json=h4_goal4.json
#   Llama 593,848 x1.000;  GLA + Canon-ABCD 393,500 (19.9 GiB) x1.509;  GLA 480,780 (13.5 GiB) x1.235
playground-bench profile $B mixer=gla canon=ABCD train.compile=true steps=10 warmup=10 top=30 json=h4_gla_profile.json   # 80.52 ms/step (busy 94%)
playground-bench profile $B $M steps=10 warmup=5 top=30 json=h4_mamba_profile_w5.json              # 105.15 ms/step (busy 96%)
playground-bench train $B compare="$M | $LL" warmup=15 steps=30 json=h4_goal3_mamba_first.json
#   Mamba2 311,943 tok/s x1.000;  Llama 573,966 x0.543  (Mamba2 = x1.84 Llama)
python3 -m pytest -q -m gpu tests/test_mixers_gpu.py -k "first_training_step or (mixer_kernel_path and gla)"   # 6 passed, 1 skipped: mamba2 40.4 s, gla 36.0 s

# ---- h5 ----
playground-bench train $B compare="$LL | $M | $M model.mixer.norm_backend=torch" warmup=10 steps=30 json=h5_goal3_dynamo_reset.json   # x2.358 / x2.291
playground-bench train $B compare="$LL | mixer=gla canon=ABCD … | mixer=gla canon=none … | model=llama mixer=rope canon=ABCD …" warmup=10 steps=30 json=h5_goal1_4_dynamo_reset.json
#   GLA + Canon x1.865;  GLA x1.233;  Llama + Canon-ABCD x1.248
# (reset taken out) the same machine, hold 4's goal-4 compare again (h5_goal4_again.json): GLA + Canon x1.546;  GLA x1.299

# ---- h6 ---- (final code: isolate, then TUNED = one config)
playground-bench train $B compare="$LL | $M | mixer=gla canon=ABCD train.compile=true" json=h6_goals34_isolated.json
#   (TUNED as a third candidate)  Llama 595,478 x1.000;  Mamba2 294,093 (22.1 GiB) x2.025;  GLA + Canon-ABCD 345,577 (19.8 GiB) x1.723
playground-bench train $B compare="$LL | $M | mixer=gla canon=ABCD train.compile=true" json=h6_goals34_tuned_only.json
#   (final)  Llama 594,895 tok/s MFU 44.3% 12.8 GiB x1.000;  Mamba2 296,962 MFU 15.8% 22.1 GiB x2.003;  GLA + Canon-ABCD 403,337 MFU 20.9% 19.8 GiB x1.475
python3 -m pytest -q -m gpu tests/test_mixers_gpu.py -k "mixer_kernel_path or first_training_step"   # 12 passed, 7 skipped: first step gla 17.8 s, mamba2 16.1 s

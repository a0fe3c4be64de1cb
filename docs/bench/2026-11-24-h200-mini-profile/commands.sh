# Where a mini-recipe step with Canon goes, 2026-11-24: one NVIDIA H200, torch 2.11.0+cu130, Triton 3.6.0,
# from the repository root with the package installed.
python3 docs/bench/2026-11-24-h200-mini-profile/prof_step.py ABCD > profile.txt

# GDN, GLA and Llama side by side, 2026-11-24: one NVIDIA H200, torch 2.11.0+cu130, Triton 3.6.0, fla-core 0.6.0,
# from the repository root.
playground-bench train task=depo1 size=12L768D train.batch_size=16 \
  compare='mixer=rope train.compile=true | mixer=gla canon=none | mixer=gdn canon=none | mixer=gdn canon=ABCD' \
  json=compare.json

#!/usr/bin/env bash
# The runs of this folder (2-core CPU, torch 2.13.0+cpu, 2026-11-29), one thread a run, up to twelve at a time.
# The first six ran at commit 473cae6 (the seed-1 and seed-2 pairs and the two initialisations with
# uncommitted changes under playground/report only), the one-position runs at e2386cf, the last four (AB,
# CD, ABC, D seed 1) at 4a3612b, started after the others had ended; the training code is the same at all three.
set -euo pipefail
run() {  # run NAME OVERRIDE...
  local name=$1; shift
  OMP_NUM_THREADS=1 WANDB_MODE=disabled playground-train task=mano_tiny mixer=nope size=2L128D \
    train.steps=3000 train.eval_every=500 train.ckpt_every=3000 train.warmup_steps=100 \
    "$@" out_dir=/tmp/mp/$name > /tmp/mp/$name.log 2>&1 &
}
mkdir -p /tmp/mp
run ABCD canon=ABCD                                   # residual (the default)
run ABCD_nores canon=ABCD_nores                       # without the residual
for s in 1 2; do
  run ABCD_s$s canon=ABCD seed=$s
  run ABCD_nores_s$s canon=ABCD_nores seed=$s
done
run ABCD_zero canon=ABCD model.canon.init=zero        # residual, taps 0: the identity at step 0
run ABCD_past canon=ABCD model.canon.init=past_average  # residual, taps 1/3 on each earlier token
for p in A B C D AB CD ABC; do                        # without the residual at some positions only
  run ${p}_nores canon=ABCD_nores model.canon.positions=$p
done
run D_nores_s1 canon=ABCD_nores model.canon.positions=D seed=1
# These ten were stopped after their evaluation at step 1,500 (SIGTERM; the summary says
# "Preempted"): up to there a run trains exactly as its 3,000-step schedule does.
left="ABCD_zero ABCD_past A_nores B_nores C_nores D_nores AB_nores CD_nores ABC_nores D_nores_s1"
while [ -n "$left" ]; do
  sleep 15
  for n in $left; do
    if grep -q "\[eval step 1500\]" /tmp/mp/$n.log; then
      pkill -TERM -f "out_dir=/tmp/mp/$n\$"; left=$(echo $left | tr ' ' '\n' | grep -vx $n | xargs)
    fi
  done
done
wait
# Four more, at commit b5d52e2 (the training code unchanged), four at a time, each stopped so after step 1,500:
#   run AC_nores canon=ABCD_nores model.canon.positions=AC
#   run BC_nores canon=ABCD_nores model.canon.positions=BC
#   run AB_nores_s1 canon=ABCD_nores model.canon.positions=AB seed=1
#   run ABC_nores_s1 canon=ABCD_nores model.canon.positions=ABC seed=1
# Four more at commit d1a0f61 (model.canon.init_scale added; the training code otherwise unchanged), the same way:
#   run ABCD_x4 canon=ABCD model.canon.init_scale=4
#   run ABCD_x4_s1 canon=ABCD model.canon.init_scale=4 seed=1
#   run AC_nores_s1 canon=ABCD_nores model.canon.positions=AC seed=1
#   run BC_nores_s1 canon=ABCD_nores model.canon.positions=BC seed=1
# Four more at commit 1af25a9 (the training code as at d1a0f61), the same way:
#   run ABCD_nores_fixed canon=ABCD_nores model.canon.init=random_fixed
#   run ABCD_nores_fixed_s1 canon=ABCD_nores model.canon.init=random_fixed seed=1
#   run ABCD_fixed canon=ABCD model.canon.init=random_fixed
#   run ABCD_nores_x025 canon=ABCD_nores model.canon.init_scale=0.25
# Eleven more at commit 1968b62 (the training code as at d1a0f61), four, four, then three at a time, the same way:
#   run ABCD_nores_fixed_x4 canon=ABCD_nores model.canon.init=random_fixed model.canon.init_scale=4
#   run ABCD_nores_fixed_x4_s1 canon=ABCD_nores model.canon.init=random_fixed model.canon.init_scale=4 seed=1
#   run ABCD_nores_fixed_k1 canon=ABCD_nores model.canon.init=random_fixed model.canon.kernel=1 model.canon.init_scale=0.5
#   run ABCD_nores_fixed_k1_s1 canon=ABCD_nores model.canon.init=random_fixed model.canon.kernel=1 model.canon.init_scale=0.5 seed=1
#   run ABCD_nores_fixed_k1x1 canon=ABCD_nores model.canon.init=random_fixed model.canon.kernel=1
#   run ABCD_nores_fixed_k1x1_s1 canon=ABCD_nores model.canon.init=random_fixed model.canon.kernel=1 seed=1
#   run ABCD_nores_fixed_x2 canon=ABCD_nores model.canon.init=random_fixed model.canon.init_scale=2
#   run ABCD_nores_fixed_x05 canon=ABCD_nores model.canon.init=random_fixed model.canon.init_scale=0.5
#   run ABCD_nores_fixed_x2_s1 canon=ABCD_nores model.canon.init=random_fixed model.canon.init_scale=2 seed=1
#   run ABCD_nores_fixed_x05_s1 canon=ABCD_nores model.canon.init=random_fixed model.canon.init_scale=0.5 seed=1
#   run ABCD_fixed_s1 canon=ABCD model.canon.init=random_fixed seed=1
# the records (without checkpoints) into this folder, then its tables:
#   for d in /tmp/mp/*/; do mkdir -p results/mini/mano_residual_cpu/$(basename $d)
#     cp $d/{config.yaml,summary.json,metrics.jsonl,train.log} results/mini/mano_residual_cpu/$(basename $d)/; done
#   python results/mini/mano_residual_cpu/table.py
# Four more at commit e10d06b with uncommitted changes in sweeps/findings.yaml only (model.canon.init_current
# added; the training code otherwise as at d1a0f61), four at a time, the same way:
#   run ABCD_nores_initc1 canon=ABCD_nores model.canon.init_current=1
#   run ABCD_nores_initc1_s1 canon=ABCD_nores model.canon.init_current=1 seed=1
#   run ABCD_initcm1 canon=ABCD model.canon.init_current=-1
#   run ABCD_initcm1_s1 canon=ABCD model.canon.init_current=-1 seed=1
# Two more at commit 947baf8 (the training code as at e10d06b), two at a time, the same way:
#   run ABCD_nores_initc1_s2 canon=ABCD_nores model.canon.init_current=1 seed=2
#   run ABCD_initcm1_s2 canon=ABCD model.canon.init_current=-1 seed=2

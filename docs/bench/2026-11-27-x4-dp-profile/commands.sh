# 2026-11-27, nvidia-h100-x4 asked, 4 x H200 given (twice). Code: commit 51718e1 as .whl/head.tar.
# Hold 1 (about 1,040 s): setup as docs/bench/2026-11-26-x4-paper-cell/commands.sh, then
export WANDB_MODE=disabled
setsid nohup python3 docs/bench/2026-11-27-x4-dp-profile/drive.py /tmp/runs /tmp/runs/report 1500 \
  > /tmp/runs/drive.log 2>&1 < /dev/null &
# drive.py: phases 1-2 (w1, w2, w1_torchconv; w2_torchconv, w2_cudagraphs), then the campaign
# (runs.json on plan.json); a waiter (/tmp/cg.py) was to run phases 3-5 after it. The machine
# was released before the records came back (README).
# Hold 2 (~590 s): fresh machine, same setup, then phases 3-6 in one call:
cat > /tmp/cg.py <<'PY'
import sys
sys.argv = ['x', '/tmp/runs', '/tmp/runs/report', '0']
sys.path.insert(0, '/tmp/head/docs/bench/2026-11-27-x4-dp-profile')
import drive
drive.STEPS = 330
CG = ['train.compile_mode=reduce-overhead']
drive.phase({'w1_cg': ('0', CG, False), 'w2_cg': ('1,2', CG, False), 'w1': ('3', [], False)})
drive.phase({'w4_cg': ('0,1,2,3', CG, False)})
drive.scaling.TASKS['depo1'] = drive.scaling.TASKS['cfg3f']
drive.phase({'cfg3f_w4_cg': ('0,1,2,3', CG, False)})
drive.phase({'cfg3f_w1_cg': ('0', CG, False), 'cfg3f_w2_cg': ('1,2', CG, False),
             'cfg3f_w1': ('3', [], False)})
PY
timeout 530 python3 /tmp/cg.py
# then the same with CG + ['train.compile_scope=blocks'] on 4 processes: failed (w4_cg_blocks.log)

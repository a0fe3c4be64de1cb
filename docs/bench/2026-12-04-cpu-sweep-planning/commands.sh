#!/usr/bin/env bash
# Sweep planning on the 2-core development machine (2026-12-04, torch 2.13.0 CPU, hydra-core 1.3.8).
# Before: the parent of the change, df14eb0, checked out in a worktree and put first on PYTHONPATH.
set -euo pipefail
git worktree add -q /tmp/before df14eb0
(cd /tmp/before && /usr/bin/time -f "%e s" env PYTHONPATH=/tmp/before \
    python -m playground.sweep.cli fig7 scale=paper launcher=local dry_run=true root=/tmp/dryroot > /tmp/before_paper.txt)
/usr/bin/time -f "%e s" playground-sweep fig7 scale=paper launcher=local dry_run=true root=/tmp/dryroot > /tmp/after_paper.txt
/usr/bin/time -f "%e s" playground-sweep fig7 scale=mini launcher=local dry_run=true root=/tmp/dryroot > /tmp/after_mini.txt
/usr/bin/time -f "%e s" playground-sweep findings scale=mini root=results/mini/runs launcher=local dry_run=true > /tmp/after_findings.txt
# every run of every sweep file through the checks a launch now makes (the list of runs that failed them)
python docs/bench/2026-12-04-cpu-sweep-planning/check_all_runs.py
# the embedded default, quiet
playground-train 'out_dir=/tmp/def/${run_name}'

#!/usr/bin/env bash
# trials.sh N MODE SLEEP: N two-rank trials of repro.py (MODE plain | destroy; rank 1 sleeps SLEEP s).
# A line a trial: trial, rank 0's exit status, rank 1's, the end of rank 0's stderr.
set -u
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
for i in $(seq 1 "$1"); do
  d=$work/t$i; mkdir -p "$d"
  python "$here/repro.py" 0 "$d/store" "$2" 2>"$d/e0" & p0=$!
  python "$here/repro.py" 1 "$d/store" "$2" "$3" 2>"$d/e1" & p1=$!
  wait $p0; r0=$?; wait $p1; r1=$?
  echo "$i $r0 $r1 $(tail -c 300 "$d/e0" | tr '\n' ' ')"
done

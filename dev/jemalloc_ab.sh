#!/usr/bin/env bash
# Usage: CLONE=DIR LORABENCH_DATA=FILE bash dev/jemalloc_ab.sh glibc-1 jemalloc-1 jemalloc-2 glibc-2 (each arm named glibc-N or jemalloc-N)
# Exp A seed 3407, 300 steps, on a CPU host: glibc malloc against jemalloc (LD_PRELOAD), alternated,
# each run --timed under the guard, from a clean clone ($CLONE; the run of 2026-12-03 used 87acd0d); peak RSS of the whole process tree
# from /usr/bin/time (ru_maxrss over waited-for descendants) and the record's own memory.peak_rss_bytes.
set -uo pipefail
cd "${CLONE:?a clean clone of the code measured}"
export PYTHONPATH=$CLONE LORABENCH_DATA=${LORABENCH_DATA:?the data file}
OUTD=${OUTD:-/tmp/jemalloc-ab}; mkdir -p $OUTD
JE=${JEMALLOC:-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}  # Debian's libjemalloc2
for arm in "$@"; do
  pre=""; [ "${arm%-*}" = jemalloc ] && pre=$JE
  start=$(date +%s.%N)
  env ${pre:+LD_PRELOAD=$pre} /usr/bin/time -v -o $OUTD/time-$arm.txt .venv/bin/lorabench run benchmarks/setups/exp_a.toml \
    --seed 3407 --timed --stack cpu --results $OUTD/results-$arm > $OUTD/run-$arm.log 2>&1
  rc=$?
  echo "$arm: rc=$rc whole command $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s | max RSS $(grep 'Maximum resident' $OUTD/time-$arm.txt | awk '{print $NF}') kB | $(tail -n 1 $OUTD/run-$arm.log | cut -c1-150)" | tee -a $OUTD/ab.txt
done

#!/bin/sh
# Train (or resume) the paper-scale models of one token layout, seed after seed.
# Usage (from the repository root): sh kmt_ref/results/learning/run_paper_queue.sh d+k "0 1 2"
# Each model checkpoints every 50 steps to kmt_ref/results/learning/paper/<dk|d>-seed<S>.npz;
# rerunning the same command resumes where it stopped.
tokens=$1
seeds=$2
for s in $seeds; do
  OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
    ${PYTHON:-python} -m kmt_ref train --paper --tokens "$tokens" --seed "$s" || exit 1
done

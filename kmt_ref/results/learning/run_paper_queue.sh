#!/bin/sh
# Train (or resume) the paper-scale models of one token layout, seed after seed, on one core.
# Usage (from the repository root): sh kmt_ref/results/learning/run_paper_queue.sh d+k "4 5" [train options]
# (e.g. --workers 2, or --scheduler tcp://host:8786 for a Dask cluster).
# Checkpoints (every 50 steps) go to ${KMT_REF_RESULTS:-./kmt_ref_results}/learning/paper/<dk|d>-seed<S>.npz;
# a committed checkpoint that needs more steps is copied there first. Rerunning the same command
# resumes where it stopped. To add finished models to the committed results, copy them into
# kmt_ref/results/learning/paper/ and commit them (no command writes there).
tokens=$1
seeds=$(echo "$2" | tr ' ' ',')
shift 2
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
  nice ${PYTHON:-python} -m kmt_ref train --paper --tokens "$tokens" --seeds "$seeds" "$@"

#!/bin/sh
# Train (or resume) the paper's training-figure settings (Figures 9, 10a, 10b) at the authors' scale
# (512 points, batches of 32, 10,000 steps), both token layouts, for the given seeds, on one core.
# Usage (from the repository root): sh kmt_ref/results/learning/run_paper_figures.sh "0"
# Checkpoints go to ${KMT_REF_RESULTS:-./kmt_ref_results}/learning/paper-d<D>-k<K>-tau<T>/<dk|d>-seed<S>.npz;
# a committed checkpoint that needs more steps is copied there first, and rerunning the same
# command resumes where it stopped. Figure 10a's k = 10 panel is the committed paper runs.
seeds=$1
for s in $seeds; do
  for setting in "6 4 1" "6 4 0.25" "6 4 0.143" "6 4 0.1" "6 8 0.1" "6 16 0.1" \
                 "6 32 1" "6 32 0.25" "6 32 0.143" "6 32 0.1" "16 32 0.1" "25 32 0.1"; do
    set -- $setting
    for tokens in d+k d; do
      OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
        nice ${PYTHON:-python} -m kmt_ref train --paper --tokens "$tokens" --seed "$s" --k "$1" --d "$2" --tau "$3" \
        || exit 1
    done
  done
done

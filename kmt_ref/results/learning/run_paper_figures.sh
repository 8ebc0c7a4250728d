#!/bin/sh
# Train (or resume) the paper's training-figure settings (Figures 9, 10a, 10b) at the authors' scale
# (512 points, batches of 32, 10,000 steps), both token layouts, for the given seeds, on one core.
# Usage (from the repository root): sh kmt_ref/results/learning/run_paper_figures.sh "0" [train options]
# e.g. run_paper_figures.sh "0,1,2" --workers 2, or --scheduler tcp://host:8786 for a Dask cluster.
# Checkpoints go to ${KMT_REF_RESULTS:-./kmt_ref_results}/learning/paper-d<D>-k<K>-tau<T>/<dk|d>-seed<S>.npz;
# a committed checkpoint that needs more steps is copied there first, and rerunning the same
# command resumes where it stopped. Figure 10a's k = 10 panel is the committed paper runs.
seeds=$(echo "$1" | tr ' ' ',')
shift
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
  nice ${PYTHON:-python} -m kmt_ref train --paper --figure-settings --tokens d+k,d --seeds "$seeds" "$@"

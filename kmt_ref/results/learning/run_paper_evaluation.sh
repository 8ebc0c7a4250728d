#!/bin/sh
# Evaluate every paper-scale learning experiment on the same seeds, one after another.
# Usage (from the repository root): sh kmt_ref/results/learning/run_paper_evaluation.sh "0,1,2,3,4,5,6,7,8,9" [threads]
# Nothing is trained (--no-train): the checkpoints are evaluated as they are (one found under the
# output directory comes before the committed one). The JSON goes to
# ${KMT_REF_RESULTS:-./kmt_ref_results}/learning/paper/<experiment>.json (and a log next to it);
# to make them the committed results, copy them into kmt_ref/results/learning/paper/ and commit
# them together with the README table they feed (no command writes there).
seeds=$1
threads=${2:-1}
out=${KMT_REF_RESULTS:-./kmt_ref_results}
mkdir -p "$out/learning/paper"
for e in learning ablation kmeanspp generalization families weights; do
  OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
    ${PYTHON:-python} -m kmt_ref reproduce "$e" --paper --no-train --seeds "$seeds" --threads "$threads" \
    --results-dir "$out/learning" > /dev/null 2> "$out/learning/paper/$e.log" || { echo "$e failed (see $out/learning/paper/$e.log)"; exit 1; }
  echo "$e done $(date +%T)"
done

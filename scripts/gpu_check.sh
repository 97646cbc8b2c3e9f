#!/usr/bin/env bash
# The runtime's GPU paths checked on a machine with an NVIDIA GPU (not part of the
# test suite: CI has no GPU). Needs python3 with CUDA torch, numpy, pandas, pyarrow,
# psutil and nvidia-ml-py (the otf2 package too for the --timeline runs).
#   OUT=results bash scripts/gpu_check.sh      # PASS/FAIL lines; OUT/gpu_check.json
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-gpu-check-out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia-smi.txt"
"${PYTHON:-python3}" scripts/gpu_check.py --out "$OUT" 2>&1 | tee "$OUT/gpu_check.log"
exit "${PIPESTATUS[0]}"

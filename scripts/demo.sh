#!/usr/bin/env bash
# The main job on its embedded default: installs cctviz (and torch, CPU) in .venv,
# profiles the bundled GPT example training on 2 CPU processes (gloo) with DDP and
# FSDP2 under `cctviz run`, prints the tree and the communication per module, and
# writes the runs, tables and figures (SVG, PDF) to ./out (pass --out DIR to change).
# It also installs what notebooks/ need: `.venv/bin/jupyter lab notebooks` afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
setup_env "torch,export,notebooks"
.venv/bin/cctviz demo "$@"

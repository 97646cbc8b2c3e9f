#!/usr/bin/env bash
# The main job on its embedded default: installs cctviz in .venv, runs the demo,
# and writes its outputs to ./out (pass --out DIR to change).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
setup_env
.venv/bin/cctviz demo "$@"

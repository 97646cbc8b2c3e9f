#!/usr/bin/env bash
# Remake requirements/test-constraints.txt from a fresh resolution of .[test]
# (newest releases that fit pyproject.toml's ranges). Run it on purpose, then run
# scripts/test.sh and commit the file with what changed and why.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
tmp=$(mktemp -d)
python3 -m venv "$tmp/venv"
VENV="$tmp/venv"
"$VENV/bin/python" -m pip install -q --upgrade pip
wheel=$(ls /opt/wheels/torch-${TORCH_VERSION}+cpu-*.whl 2>/dev/null | head -n1 || true)
"$VENV/bin/python" -m pip install -q "${wheel:-torch==$TORCH_VERSION}"
"$VENV/bin/python" -m pip install -q ".[test]"
{
  echo "# The test environment, pinned: scripts/setup.sh installs .[test] with these as pip constraints,"
  echo "# so a release elsewhere cannot turn main red. Remake it with scripts/lock.sh after a deliberate upgrade."
  echo "# torch is installed first by scripts/setup.sh (the $TORCH_VERSION CPU wheel) and is not listed here."
  "$VENV/bin/python" -m pip freeze --exclude-editable | grep -v -i -E "^(torch|cctviz)( @|==)"
} > "$CONSTRAINTS"
rm -rf "$tmp"
echo "wrote $CONSTRAINTS ($(grep -vc '^#' "$CONSTRAINTS") packages)"

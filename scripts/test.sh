#!/usr/bin/env bash
# Run the whole test suite on a fresh machine: installs what it needs
# (virtualenv, npm packages, pip packages, Debian's chromium for browser tests and
# poppler-utils for the PDF export tests).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
setup_env test
ensure_chromium
ensure_poppler
ensure_otf2_tools

echo "== lint"
.venv/bin/ruff check cctviz tests benchmarks examples
.venv/bin/ruff format --check cctviz tests benchmarks examples || echo "(formatting differences above are not fatal)"

echo "== layering (import-linter contract in pyproject.toml; DESIGN.md section 3)"
.venv/bin/lint-imports --no-cache --no-logo

echo "== JavaScript unit tests"
npm test --silent

echo "== Python tests (unit, property, doctests, notebooks)"
.venv/bin/python -m pytest -n 2 -p no:cacheprovider "$@"

# Shared set-up for scripts/demo.sh and scripts/test.sh (sourced, not run).
setup_env() {
  local extra="${1:-}"
  if [ ! -x .venv/bin/python ]; then
    echo "== creating .venv"
    python3 -m venv .venv
  fi
  .venv/bin/python -m pip install -q --upgrade pip
  if ! command -v npm >/dev/null; then
    echo "npm is needed to build the JavaScript bundle; install Node.js 20+" >&2
    exit 1
  fi
  echo "== npm packages"
  npm ci --silent --no-audit --no-fund
  echo "== torch (CPU wheel first, so nothing pulls the CUDA packages)"
  install_torch
  echo "== pip packages"
  if [ -n "$extra" ]; then
    .venv/bin/python -m pip install -q -e ".[$extra]"
  else
    .venv/bin/python -m pip install -q -e .
  fi
}

# torch==2.13.0 from the CPU wheel on local disk when there is one, else from the
# PyTorch CPU index; a bare `pip install torch` would pull several GB of CUDA packages.
TORCH_VERSION="2.13.0"
install_torch() {
  if .venv/bin/python -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null; then
    return 0
  fi
  local wheel
  wheel=$(ls /opt/wheels/torch-${TORCH_VERSION}+cpu-*.whl 2>/dev/null | head -n1 || true)
  if [ -n "$wheel" ]; then
    .venv/bin/python -m pip install -q "$wheel"
  else
    .venv/bin/python -m pip install -q "torch==${TORCH_VERSION}" --index-url https://download.pytorch.org/whl/cpu
  fi
}

ensure_chromium() {
  if [ -x /usr/bin/chromium ]; then return 0; fi
  echo "== installing Debian's chromium (browser tests)"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
}

# poppler-utils (pdffonts, pdfinfo): the export tests check the PDFs' fonts and page size.
ensure_otf2_tools() {
  if command -v otf2-print >/dev/null; then return 0; fi
  echo "== installing Debian's otf2-tools (otf2-print reads the traces cctviz writes, in a test)"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq otf2-tools >/dev/null
}

ensure_poppler() {
  if command -v pdffonts >/dev/null && command -v pdfinfo >/dev/null; then return 0; fi
  echo "== installing Debian's poppler-utils (PDF export tests)"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq poppler-utils >/dev/null
}

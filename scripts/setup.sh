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
  echo "== pip packages"
  if [ -n "$extra" ]; then
    .venv/bin/python -m pip install -q -e ".[$extra]"
  else
    .venv/bin/python -m pip install -q -e .
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

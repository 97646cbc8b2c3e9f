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
  echo "== pip packages (pinned by $CONSTRAINTS)"
  if [ -n "$extra" ]; then
    .venv/bin/python -m pip install -q -c "$CONSTRAINTS" -e ".[$extra]"
  else
    .venv/bin/python -m pip install -q -c "$CONSTRAINTS" -e .
  fi
}

# The versions the test suite and the demo install: a release elsewhere cannot
# change them. scripts/lock.sh remakes the file after a deliberate upgrade.
CONSTRAINTS="requirements/test-constraints.txt"

# A second virtualenv in $1, installed from requirements file $2 (pip
# constraints; empty for the newest releases, as a user's `pip install` gets
# them) with the core extras, not editable: what a user has. The JavaScript
# bundles are those the main install built (cctviz/static).
setup_side_env() {
  local venv="$1" pins="${2:-}"
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install -q --upgrade pip
  local args=(--upgrade --upgrade-strategy eager ".[export,scorep,caliper]" pytest pytest-xdist hypothesis filelock build HolisticTraceAnalysis)
  if [ -n "$pins" ]; then args=(-c "$pins" "${args[@]}"); fi
  "$venv/bin/python" -m pip install -q "${args[@]}"
}

# The core suite (model, ops, readers, views, export; no browser, no torch, no
# peers that cap pandas) with the Python of virtualenv $1.
CORE_TESTS=(tests/model tests/ops tests/readers tests/views tests/export tests/test_writers_roundtrip.py
  cctviz/model cctviz/ops cctviz/readers cctviz/views cctviz/export cctviz/writers)
run_core_suite() {
  local venv="$1"; shift
  "$venv/bin/python" -c 'from importlib.metadata import version as v; print("   " + ", ".join(f"{p} {v(p)}" for p in ("numpy", "pandas", "pyarrow", "mini-racer", "anywidget")))'
  # a hang (a V8 call that never answers) ends in a failure, not in CI's 90 minutes
  # derandomised property tests (tests/hypothesis_profiles.py), as in the main run
  HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}" \
  timeout "${CORE_SUITE_LIMIT:-900}" "$venv/bin/python" -m pytest -n 2 -p no:cacheprovider -q "${CORE_TESTS[@]}" \
    --ignore tests/readers/test_kineto_torch.py --ignore tests/export/test_packaging.py -m "not slow" "$@"
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

# Debian packages the tests need: apt_install "why" package...
apt_install() {
  local why="$1"; shift
  echo "== installing Debian's $* ($why)"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

ensure_chromium() {
  if [ -x /usr/bin/chromium ]; then return 0; fi
  apt_install "browser tests" chromium
}

# otf2-tools: otf2-print reads the archives the runtime writes (tests/runtime/test_trace.py).
ensure_otf2_tools() {
  if command -v otf2-print >/dev/null; then return 0; fi
  apt_install "otf2-print reads the traces cctviz writes, in a test" otf2-tools
}

# Open MPI's mpirun and headers: MPI components of workflows (tests/runtime/test_mpi.py);
# mpi4py's wheel loads this libmpi (and builds against it where no wheel fits), so
# it goes in before the pip packages.
ensure_openmpi() {
  if command -v mpirun >/dev/null && command -v mpicc >/dev/null; then return 0; fi
  apt_install "MPI workflow tests" openmpi-bin libopenmpi-dev
}

# Linux perf: tests/readers/test_perf_script.py records a real profile with it.
ensure_perf() {
  if command -v perf >/dev/null && perf --version >/dev/null 2>&1; then return 0; fi
  apt_install "perf script reader tests" linux-perf
}

# poppler-utils (pdffonts, pdfinfo): the export tests check the PDFs' fonts and page size.
ensure_poppler() {
  if command -v pdffonts >/dev/null && command -v pdfinfo >/dev/null; then return 0; fi
  apt_install "PDF export tests" poppler-utils
}

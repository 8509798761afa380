#!/usr/bin/env bash
# Install tenprof with its test tools into ./.test-venv (CPU torch 2.13.0) and run lint, types and tests.
# GPU-only tests (marked gpu) are left out here; run them on a GPU machine with: pytest -m gpu tests/gpu
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .test-venv/bin/python ]; then
  "$PY" -m venv .test-venv
fi
VPY=.test-venv/bin/python
$VPY -m pip install -q "torch==2.13.0"
$VPY -m pip install -q -e ".[dev]"
# The report page's browser test needs Debian's chromium (nothing downloads a browser): installed where
# this runs as root with apt; otherwise the test is skipped and says why.
if ! command -v chromium > /dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null 2>&1; then
    apt-get install -y -q chromium > /tmp/tenprof-chromium-install.log 2>&1 \
      || (apt-get update -q > /dev/null 2>&1 && apt-get install -y -q chromium > /tmp/tenprof-chromium-install.log 2>&1) \
      || echo "scripts/test.sh: could not install chromium (see /tmp/tenprof-chromium-install.log): the browser test will be skipped"
  else
    echo "scripts/test.sh: chromium is not installed and apt is not usable here: the browser test will be skipped"
  fi
fi
command -v chromium > /dev/null 2>&1 && echo "scripts/test.sh: browser test in $(chromium --version 2>/dev/null)"
$VPY -m ruff check src tests benchmarks examples
# The native call-site recorder is built on first use into the user's cache (about 7 s of g++ here); built
# now, as part of the set-up, where a compiler is found, rather than inside the first test that records
if command -v "${CXX:-g++}" > /dev/null 2>&1; then
  $VPY -c "from tenprof.capture import native_lines; native_lines.build_library()" \
    || echo "scripts/test.sh: the native recorder did not build here; its tests will say why"
fi
# pytest rewrites the asserts of each test module it imports and keeps the result in __pycache__ only where
# bytecode may be written: with PYTHONDONTWRITEBYTECODE=1 (see compileall below) each pytest worker rewrote every test module
# again, 2.2 s of its 5 s start. Written once here, in the background while mypy (one core) runs.
env -u PYTHONDONTWRITEBYTECODE $VPY -m pytest -q -p no:cacheprovider --collect-only tests > /tmp/tenprof-collect.log 2>&1 &
REWRITING=$!
$VPY -m mypy
wait "$REWRITING" || echo "scripts/test.sh: collecting the tests ahead failed (see /tmp/tenprof-collect.log): pytest will rewrite them itself"
# These machines set PYTHONDONTWRITEBYTECODE=1, so every process the tests start (each `tenprof run` is two:
# the launcher and the script's child) would compile tenprof's sources again: compiled once here, which
# Python still reads (13 s less CPU over the suite on 2 cores, 2026-12-01). __pycache__ is git-ignored.
$VPY -m compileall -q src tests examples > /dev/null
# Two workers: CI has 2 cores, and most of the time is child processes importing torch.
$VPY -m pytest -q -rs -p no:cacheprovider -n 2 tests

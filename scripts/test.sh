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
$VPY -m ruff check src tests benchmarks examples
$VPY -m mypy
# Two workers: CI has 2 cores, and most of the time is child processes importing torch.
$VPY -m pytest -q -p no:cacheprovider -n 2 tests

#!/usr/bin/env bash
# Set up tenprof in ./.venv (reusing a torch that is already installed, e.g. a CUDA build on a GPU
# machine) and profile the bundled example: on the GPU when there is one, else on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv --system-site-packages .venv
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q "torch==2.13.0"
fi
.venv/bin/python -m pip install -q -e .
.venv/bin/tenprof run --force --html --passes all -o tenprof-out examples/matmul_add.py --size 256 --steps 20 --warmup 2
.venv/bin/tenprof view tenprof-out --depth 8 --threshold 1
head -n 20 tenprof-out/forest.txt
.venv/bin/tenprof export --force tenprof-out --format perfetto -o tenprof-out/trace.json
echo "Open tenprof-out/report.html in a browser (it fetches nothing), tenprof-out/trace.json in https://ui.perfetto.dev ; the tensor forest is in tenprof-out/forest.txt and .dot;"
echo "re-render any time with: .venv/bin/tenprof report tenprof-out"

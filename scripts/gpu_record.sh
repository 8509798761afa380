#!/usr/bin/env bash
# Runs on the GPU machine (the `device` tool): installs tenprof from the carried wheels as a user would,
# records the fixture profiles for tests/data, and leaves logs and a tarball under $OUT.
#   usage: bash scripts/gpu_record.sh [record] [findings] [compile] [tensors] [overhead REPEATS] [import] [gputests]
set -u
OUT=${OUT:-/tmp/tenprof-out}
REPO=$(pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import torch, tenprof; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'tenprof', tenprof.__file__)"
date -u +%Y-%m-%dT%H:%M:%SZ >> "$OUT/gpu.txt"
WORK=$(mktemp -d)
mkdir -p "$WORK/prof" "$WORK/logs"

record() {  # name, then the example and its arguments
  local name=$1; shift
  ( cd "$REPO" && tenprof run --verify --limit 8 -o "$WORK/prof/$name" "$@" ) > "$WORK/logs/$name.log" 2>&1
  echo "exit=$?" >> "$WORK/logs/$name.log"
  tenprof view "$WORK/prof/$name" --depth 9 --threshold 1 >> "$WORK/logs/$name.log" 2>&1
  tail -n 40 "$WORK/logs/$name.log" | head -n 30
}

record_tensors() {  # name, then the example and its arguments: the tensors pass alone
  local name=$1; shift
  ( cd "$REPO" && tenprof run --passes tensors --limit 8 -o "$WORK/prof/tensors_$name" "$@" ) > "$WORK/logs/tensors_$name.log" 2>&1
  echo "exit=$?" >> "$WORK/logs/tensors_$name.log"
  tail -n 45 "$WORK/logs/tensors_$name.log"
  head -n 40 "$WORK/prof/tensors_$name/forest.txt"
}

record_counters() {  # name, then the example and its arguments: timeline + counters passes
  local name=$1; shift
  ( cd "$REPO" && tenprof run --passes timeline,counters --limit 12 -o "$WORK/prof/counters_$name" "$@" ) > "$WORK/logs/counters_$name.log" 2>&1
  echo "exit=$?" >> "$WORK/logs/counters_$name.log"
  tail -n 45 "$WORK/logs/counters_$name.log"
}

while [ $# -gt 0 ]; do
  task=$1; shift
  case $task in
  record)
    record matmul64 examples/matmul_add.py --size 64 --steps 5
    record matmul64_warm examples/matmul_add.py --size 64 --steps 5 --warmup 3
    record matmul4096 examples/matmul_add.py --size 4096 --steps 5
    record matmul4096_warm examples/matmul_add.py --size 4096 --steps 5 --warmup 3
    record gpt2 examples/gpt2_train.py --steps 2 --warmup 1
    record conv examples/conv_block.py --steps 3 --warmup 1
    record mlp examples/small_mlp.py --steps 5 --warmup 2
    ;;
  findings)  # a workload that triggers each finding and a fixed variant (tests/data/finding_*)
    for f in launch_bound host_gaps sync_in_loop pageable_copy hidden_copies variance recompile compile_tiny graph_break; do
      record "finding_${f}" examples/findings/$f.py
      record "finding_${f}_fixed" examples/findings/$f.py --fixed
    done
    ( cd "$REPO" && tenprof run --verify --quiet -o "$WORK/prof/finding_cold_start" examples/matmul_add.py --size 4096 --steps 6 ) > "$WORK/logs/finding_cold_start.log" 2>&1
    ( cd "$REPO" && tenprof run --verify --quiet --schedule wait=2,warmup=1,active=5 -o "$WORK/prof/finding_cold_start_fixed" examples/matmul_add.py --size 4096 --steps 10 ) > "$WORK/logs/finding_cold_start_fixed.log" 2>&1
    for d in "$WORK"/prof/finding_*; do tenprof report "$d" --limit 3 2>&1 | grep -E "^[0-9]+\. |^Findings" | sed "s|^|$(basename "$d"): |"; done
    ;;
  compile)  # only the torch.compile pair
    record finding_recompile examples/findings/recompile.py
    record finding_recompile_fixed examples/findings/recompile.py --fixed
    record finding_compile_tiny examples/findings/compile_tiny.py
    record finding_compile_tiny_fixed examples/findings/compile_tiny.py --fixed
    for d in "$WORK"/prof/finding_*; do tenprof report "$d" --limit 3 2>&1 | grep -E "^[0-9]+\. |^Findings|seen" | sed "s|^|$(basename "$d"): |"; done
    ;;
  tensors)  # the tensors pass (tests/data/tensors/*) and a compiled workload under it
    record_tensors gpt2 examples/gpt2_train.py --steps 1 --warmup 1
    record_tensors conv examples/conv_block.py --steps 2 --warmup 1
    record_tensors compile_tiny examples/findings/compile_tiny.py
    ;;
  counters)  # the counters pass on small workloads (tests/data/counters/*)
    record_counters matmul examples/matmul_add.py --size 1024 --steps 3
    record_counters mlp examples/small_mlp.py --steps 3 --warmup 1
    ;;
  stalls)  # timeline + stalls on planted kernels (tests/data/stalls/planted); the .ncu-rep is not kept
    ( cd "$REPO" && tenprof run --passes timeline,stalls --replay-scopes gather,compute,bank_conflicts --limit 12 -o "$WORK/prof/stalls_planted" examples/stalls/planted.py ) > "$WORK/logs/stalls_planted.log" 2>&1
    echo "exit=$?" >> "$WORK/logs/stalls_planted.log"
    grep -v "^==PROF==" "$WORK/logs/stalls_planted.log" | tail -n 80
    rm -f "$WORK"/prof/stalls_*/stalls/raw/counters.ncu-rep
    ;;
  stalls_combined)  # timeline + counters + stalls sharing one ncu run on the small MLP (tests/data/stalls/mlp)
    ( cd "$REPO" && /usr/bin/time -f "combined_wall_s=%e" tenprof run --passes timeline,counters,stalls --limit 8 -o "$WORK/prof/stalls_mlp" examples/small_mlp.py --steps 2 --warmup 1 ) > "$WORK/logs/stalls_mlp.log" 2>&1
    echo "exit=$?" >> "$WORK/logs/stalls_mlp.log"
    grep -v "^==PROF==" "$WORK/logs/stalls_mlp.log" | tail -n 60
    grep -c "tenprof_keep" "$WORK"/prof/stalls_mlp/*/raw/ncu.log 2>/dev/null
    ls -la "$WORK"/prof/stalls_mlp/*/raw/
    rm -f "$WORK"/prof/stalls_*/*/raw/counters.ncu-rep
    ;;
  stalls_import)  # a SourceCounters report made with plain ncu, read by tenprof import-ncu
    ( cd "$REPO" && ncu --section SourceCounters --section SpeedOfLight -c 4 -f -o "$WORK/plain_sc" python3 examples/matmul_add.py --size 1024 --steps 1 ) > "$WORK/logs/stalls_import.log" 2>&1
    tenprof import-ncu "$WORK/plain_sc.ncu-rep" -o "$WORK/prof/stalls_import" >> "$WORK/logs/stalls_import.log" 2>&1
    echo "exit=$?" >> "$WORK/logs/stalls_import.log"
    tenprof report "$WORK/prof/stalls_import" --limit 5 >> "$WORK/logs/stalls_import.log" 2>&1
    grep -v "^==PROF==" "$WORK/logs/stalls_import.log" | tail -n 60
    ;;
  stalls_cost)  # the stalls pass on GPT-2 small, one step, against the plain run (wall time, replays)
    ( cd "$REPO" && /usr/bin/time -f "plain_wall_s=%e" python3 examples/gpt2_train.py --steps 1 --warmup 0 ) 2>&1 | tail -n 2 | tee "$OUT/stalls_cost.txt"
    ( cd "$REPO" && /usr/bin/time -f "stalls_wall_s=%e" tenprof run --quiet --passes stalls -o "$WORK/gpt2_stalls" examples/gpt2_train.py --steps 1 --warmup 0 ) 2>&1 | grep -v "^==PROF==" | tail -n 4 | tee -a "$OUT/stalls_cost.txt"
    python3 -c "import json; m = json.load(open('$WORK/gpt2_stalls/meta.json')); print('stalls pass', m['passes']['stalls'])" | tee -a "$OUT/stalls_cost.txt"
    ;;
  dedup)  # what de-duplication saves on GPT-2 (one training step): MODE is dedup or all
    mode=${1:-dedup}; shift
    python3 benchmarks/counters_dedup.py run --mode "$mode" --json "$OUT/counters_$mode.json" 2>&1 | tee "$OUT/counters_$mode.log" | grep -v "^==PROF==" | tail -n 30
    ;;
  overhead)
    repeats=${1:-1}; shift
    python3 benchmarks/overhead.py --repeats "$repeats" --json "$OUT/overhead.json" 2>&1 | tee "$OUT/overhead.txt"
    ;;
  import)
    python3 benchmarks/import_speed.py --workdir "$WORK/big" 2>&1 | tee "$OUT/import_speed.txt"
    ;;
  gputests)
    python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee "$OUT/gputests.txt" | tail -n 15
    ;;
  esac
  # after every task, so a call cut off by its time limit still brings back what was recorded
  tar -C "$WORK" -czf "$OUT/recordings.tgz" prof logs 2>/dev/null
done
ls -la "$OUT"

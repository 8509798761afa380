#!/usr/bin/env bash
# Runs on the GPU machine (the `device` tool): installs tenprof from the carried wheels as a user would,
# then runs end-to-end checks of the command line and writes their logs under $OUT.
#   usage: bash scripts/gpu_check.sh TASK...   (cli toggle calibrate honest compiled components allpasses gputests newuser; see the cases below)
set -u
OUT=${OUT:-/tmp/tenprof-check}
mkdir -p "$OUT"
REPO=$(pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import torch, tenprof; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'tenprof', tenprof.__file__)" | tee -a "$OUT/gpu.txt"
date -u +%Y-%m-%dT%H:%M:%SZ | tee -a "$OUT/gpu.txt"
WORK=$(mktemp -d)

step() { echo; echo "=== $*"; }

cli() {  # issue 15, end to end: what tenprof shows, what it keeps, what it refuses
  cd "$WORK" || return
  step "run: the script's output only, the profiler's lines in raw/profiler.log"
  tenprof run -o prof "$REPO/examples/matmul_add.py" --size 1024 --steps 3 > run.out 2> run.err
  echo "exit=$?"; echo "--- stderr:"; cat run.err; echo "--- stdout (head):"; head -n 5 run.out
  echo "--- profiler.log:"; cat prof/timeline/raw/profiler.log 2>&1
  grep -c USDT run.err run.out
  step "run --schedule: allocator warning kept out"
  tenprof run --quiet -o sched "$REPO/examples/matmul_add.py" --size 1024 --steps 6 --warmup 0 2> sched.err
  tenprof run --quiet --schedule wait=1,warmup=1,active=2 -o sched2 "$REPO/examples/matmul_add.py" --size 1024 --steps 6 2> sched2.err
  echo "exit=$?"; echo "--- stderr (quiet):"; cat sched.err sched2.err; echo "--- log:"; cat sched2/timeline/raw/profiler.log
  step "--force on a fake profile"
  mkdir fake; echo '{"my":"config"}' > fake/meta.json; echo keep > fake/important.txt
  tenprof run --force -o fake "$REPO/examples/matmul_add.py" --size 64 --steps 1; echo "exit=$?"; ls -a fake
  step "--force on a real profile with the user's notes"
  echo mine > prof/notes.txt; mkdir prof/plots
  tenprof run --quiet --force -o prof "$REPO/examples/matmul_add.py" --size 1024 --steps 2; echo "exit=$?"; ls -a prof; ls -a .
  step "damaged: kernels.parquet deleted"
  cp -r prof damaged; rm damaged/timeline/kernels.parquet
  tenprof report damaged; echo "exit=$?"
  step "report | head"
  tenprof report prof | head -n 3; echo "exit=${PIPESTATUS[0]}"
  step "import of tenprof's own Perfetto export"
  tenprof export prof -o trace.json && tenprof import trace.json -o imp; echo "exit=$?"; ls
  step "run -m no_such_module"
  tenprof run --quiet -o nomod -m no_such_module; echo "exit=$?"
  cd "$REPO" || return
}

toggle() {  # issue 16: does a step with collection toggled off run at the un-profiled speed?
  python3 benchmarks/toggle_probe.py --workload mlp --steps 20 --rounds 3 2> /dev/null
  python3 benchmarks/toggle_probe.py --workload gpt2 --steps 5 --rounds 3 2> /dev/null
}

calibrate() {  # issue 16: the capture's cost per op, by what it records (the estimate's cost model)
  for rec in ops all stack; do
    python3 benchmarks/toggle_probe.py --workload mlp --steps 20 --rounds 3 --record "$rec" 2> /dev/null
    python3 benchmarks/toggle_probe.py --workload gpt2 --steps 5 --rounds 3 --record "$rec" 2> /dev/null
  done
}

honest() {  # issue 16: tenprof run measures its own overhead; findings judged on the un-profiled program
  mkdir -p "$OUT/prof"
  one() {  # name, then the example and its arguments
    local name=$1; shift
    tenprof run --limit 3 -o "$WORK/$name" "$@" > "$WORK/$name.log" 2>&1; echo "exit=$?" >> "$WORK/$name.log"
    echo "--- $name"; grep -v "^loop_s" "$WORK/$name.log" | sed -n '1,/^Per step/p' | head -n 60
    tar czf "$OUT/prof/$name.tgz" -C "$WORK" "$name"
  }
  one gpt2_fp32 examples/gpt2_fp32.py --steps 9 --warmup 3
  one gpt2_compiled examples/compiled_train.py --model gpt2 --steps 9 --warmup 3
  one mlp examples/small_mlp.py --steps 20 --warmup 2
  one conv examples/conv_block.py --steps 9 --warmup 3
}

compiled() {  # issue 16: compiled bf16 GPT-2's report (overhead line, findings) after the idle-gap fix
  tenprof run --limit 3 -o "$WORK/gpt2_compiled" examples/compiled_train.py --model gpt2 --steps 9 --warmup 3 2>&1 \
    | grep -v "^loop_s" | sed -n '1,/^Per step/p' | head -n 60
}

components() {  # issue 16: what each part of the capture costs, one process per workload, phases interleaved
  python3 benchmarks/capture_components.py --workload mlp --steps 100 --rounds 5 2> /dev/null
  python3 benchmarks/capture_components.py --workload conv --steps 10 --rounds 3 2> /dev/null
  python3 benchmarks/capture_components.py --workload gpt2-fp32 --steps 5 --rounds 3 2> /dev/null
  python3 benchmarks/capture_components.py --workload gpt2-compiled --steps 10 --rounds 3 2> /dev/null
}

components2() {  # issue 16: shapes, memory and Kineto's external correlation, apart
  local phases=plain,cupti,kineto,kineto-shapes,kineto-memory,kineto-full,native,tenprof,kineto-nocorr,tenprof-nocorr,light-nocorr
  python3 benchmarks/capture_components.py --workload mlp --steps 100 --rounds 5 --phases $phases 2> /dev/null
  python3 benchmarks/capture_components.py --workload gpt2-compiled --steps 10 --rounds 3 --phases $phases 2> /dev/null
}

allpasses() {  # issue 18, end to end after the refactor: every pass, the files the CLI draws, every export
  cd "$WORK" || return
  step "run --passes all on the transposed add (tensor stall cost)"
  tenprof run --limit 4 --passes all --access-every 1024 -o allp "$REPO/examples/tensor_cost/transposed.py" --size 2048 --steps 2 > all.out 2> all.err
  echo "exit=$?"; tail -n 5 all.err; grep -E "^Findings|^[0-9]+\. |Tensor stall cost|^Warp stalls|^Hardware" all.out | head -n 20
  python3 -c "import json; m=json.load(open('allp/meta.json')); [print(k, v['state'], v.get('reason','')[:160]) for k,v in m['passes'].items()]; print('timeline meta', m.get('timeline'))"
  ls allp
  step "report --json: every section's key"
  tenprof report allp --json > report.json; echo "exit=$?"
  python3 -c "import json; d=json.load(open('report.json')); print({k: (type(v).__name__, len(v) if hasattr(v,'__len__') else v) for k,v in d.items()})"
  step "exports"
  for f in json operators stall-cost blame-dot forest forest-dot perfetto hatchet; do
    tenprof export allp --format $f -o "out_$f" 2>&1 | tail -n 1; echo "$f exit=$?"
  done
  tenprof export allp --format forest-svg -o forest.svg 2>&1 | tail -n 1
  ls -la out_* forest.svg 2>&1 | awk '{print $5, $9}'
  cd "$REPO" || return
}

gputests() {  # GPUTESTS: a pytest selection (default: all of tests/gpu); the whole log in $OUT/gputests-full.log
  python3 -m pytest -q -p no:cacheprovider -m gpu -s -rA --tb=short ${GPUTESTS:-tests/gpu} > "$OUT/gputests-full.log" 2>&1
  grep -E "^(PASSED|FAILED|ERROR)|passed|failed|^E |seen|threads:|\{'native'" "$OUT/gputests-full.log" | tail -n 60
}

overhead() {  # issue 16: benchmarks/overhead.py; OVERHEAD_ARGS picks workloads, configs, repeats
  python3 benchmarks/overhead.py ${OVERHEAD_ARGS:-} --json "$OUT/" 2>&1 | tail -n 40
}

newuser() {  # issue 35 where there is a GPU: what a new user meets on the command line
  cd "$WORK" || return
  step "--passes all: what runs here, and what is left out"
  python3 -c "from tenprof.record.launcher import all_passes; print(all_passes())"
  step "in-process profile: the profiler's own lines kept out of stderr"
  printf 'import sys, torch, tenprof\nx = torch.ones(1024, 1024, device="cuda")\nwith tenprof.profile("ip") as p:\n    for i in range(6):\n        x = torch.tanh(x @ x)\n        print(f"user line {i}", file=sys.stderr)\n        p.step()\ntorch.cuda.synchronize()\n' > inproc.py
  python3 inproc.py 2> inproc.err; echo "exit=$?"; echo "--- stderr:"; cat inproc.err; echo "--- profiler.log:"; cat ip/timeline/raw/profiler.log
  step "run -m: a missing module, a package without __main__, a module that is there"
  tenprof run -m no_such_module; echo "exit=$? (want 2)"; ls
  mkdir -p pk; touch pk/__init__.py
  printf 'import torch\nx = torch.ones(8, device="cuda") * 2\nprint("ran", x.sum().item())\n' > pk/job.py
  tenprof run -m pk; echo "exit=$? (want 2)"
  tenprof run --quiet -o modrun -m pk.job; echo "exit=$? (want 0)"
  step "overhead verdict: small MLP, 14 steps (3, 8, 13 run with the capture off)"
  tenprof run -o mlp14 "$REPO/examples/small_mlp.py" --steps 14 --warmup 0 > mlp14.txt 2> /dev/null
  grep -A2 "^Overhead" mlp14.txt; echo "lines ending in a space: $(grep -c ' $' mlp14.txt)"
  step "overhead verdict: 4096 matmuls, GPU-bound, 14 steps"
  tenprof run -o mm14 "$REPO/examples/matmul_add.py" --size 4096 --steps 14 > mm14.txt 2> /dev/null
  grep -A2 "^Overhead" mm14.txt
  step "the steps behind the verdicts (ms; * = run with the capture off)"
  for prof in mlp14 mm14; do
    python3 -c "import sys; from tenprof.store.profile import load_profile; s = load_profile(sys.argv[1]).table('steps').to_pydict(); print(sys.argv[1], ' '.join(f\"{d / 1e6:.2f}{'' if on else '*'}\" for d, on in zip(s['own_duration_ns'], s['capture_on'])))" $prof
  done
  step "bad input on a GPU profile"
  tenprof view mlp14 --exclude '(' 2>&1 | tail -n 1; tenprof export mlp14 -o nope/trace.json; echo "exit=$?"
  tenprof export mlp14 --format csv --table ops -o ops.csv; head -c 300 ops.csv; echo
  cd "$REPO" || return
}

for task in "$@"; do
  echo "##### $task"
  "$task" 2>&1 | tee "$OUT/$task.log"
done

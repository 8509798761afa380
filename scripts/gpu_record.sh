#!/usr/bin/env bash
# Runs on the GPU machine (the `device` tool): installs tenprof from the carried wheels as a user would,
# records the fixture profiles for tests/data, and leaves logs and a tarball under $OUT.
#   usage: bash scripts/gpu_record.sh TASK... (fix36 cause36 threads36 whichpart36 periods36 clocks36b clocks36 teardowntest36 slowmode36 exit36 plan36 settle36gpu under36 pinned36 flag38e partsc38 tests38 parity38g parity38c fixture38s table38 boundary38 detach38 check38 memc38 flag38 kindsc38 attach38 tail38 inrunc38 opstest38 kinds38 stepsops38 opsfinal38 cost38 ops38 steps38 inrun38 fixture38 gate38 sample38 gputests_cupti cupti38a cupti38b cupti38c cupti38d timedin36 workeroom39 native38o memory39 ownprof38 groups40 ranks40 ondemand41 ondemand41ddp listener41 native38n native38m native38l native38k native38j native38i native38h native38g native38f native38e native38d native38c native38b native38 gputests_native parts38 decomp36 retime36b compiled36 teardown36b teardown36 drift36 ddp36t ddp36 defer36 same36 which36 settle36 diag36b final36b stop36 stopprobe36 timed36 diag36 final36 last36 gb36 retime36 corpus36rec corpus36 generate36 perf25 record findings compile tensors counters stalls ... compiled compiled_trace compiled_stalls compiled_autotune ranks gputests host19 loader19 ranks19 user20 user20b user20c user20d user20e patterns21 patterns21b diff22 diff22cpu gpu22 page23 access_split; see the cases below)
set -u
OUT=${OUT:-/tmp/tenprof-out}
REPO=$(pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "${SITE:=/tmp/site}" .whl/*.whl || exit 1
export PYTHONPATH=$SITE PATH=$SITE/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$OUT/gpu.txt"
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

steps_of() {  # a profile's steps: number, capture on, own duration (ms)
  python3 -c "import sys; from tenprof.store.profile import load_profile as L; s=L(sys.argv[1]).table('steps').to_pydict(); print(sys.argv[1]); [print(' ', n, int(c), round(d/1e6, 3)) for n, c, d in zip(s['step'], s['capture_on'], s['own_duration_ns'])]" "$1"
}

passes() {  # each pass's state and note, from a profile's meta.json
  python3 -c "import json,sys; m=json.load(open(sys.argv[1]+'/meta.json')); [print(k, v['state'], round(v.get('duration_s') or 0, 1), 's (run', round(v.get('run_s') or 0, 1), 'tables', round(v.get('build_s') or 0, 1), ')', v.get('reason','')[:300]) for k, v in m['passes'].items()]; print('script wall', m['run'].get('wall_time_s'))" "$1"
}

record_cost() {  # name, then the example and its arguments: every pass the tensor stall cost needs
  local name=$1; shift
  ( cd "$REPO" && tenprof run --quiet --passes timeline,tensors,stalls,accesses --access-every "${ACCESS_EVERY:-64}" -o "$WORK/prof/cost_$name" "$@" ) > "$WORK/logs/cost_$name.log" 2>&1
  echo "exit=$?" >> "$WORK/logs/cost_$name.log"
  grep -v "^==PROF==" "$WORK/logs/cost_$name.log" | tail -n 8
  passes "$WORK/prof/cost_$name"
  head -n 8 "$WORK/prof/cost_$name/tensor_stall_cost.csv" 2>/dev/null | cut -c1-260
  rm -f "$WORK"/prof/cost_"$name"/*/raw/counters.ncu-rep
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
  findings17)  # issue 17: new checks' pairs, and torch.profiler traces (no steps, a final synchronize)
    for f in fp32_gemm channels_last strided_add; do
      record "finding_${f}" examples/findings/$f.py
      record "finding_${f}_fixed" examples/findings/$f.py --fixed
    done
    mkdir -p "$WORK/prof/torch_traces"
    for f in conv_block:examples/conv_block.py fp32_gemm:examples/findings/fp32_gemm.py; do
      name=${f%%:*}; script=${f#*:}
      ( cd "$REPO" && PYTHONPATH="$REPO/examples/findings:$PYTHONPATH" python3 benchmarks/torch_profiler_run.py "$WORK/prof/torch_traces/$name.json" $script --steps 5 ) > "$WORK/logs/tp_$name.log" 2>&1
      ( cd "$REPO" && PYTHONPATH="$REPO/examples/findings:$PYTHONPATH" python3 benchmarks/torch_profiler_run.py --stack "$WORK/prof/torch_traces/${name}_stack.json" $script --steps 5 ) > "$WORK/logs/tp_${name}_stack.log" 2>&1
    done
    gzip -f "$WORK"/prof/torch_traces/*.json
    ls -la "$WORK/prof/torch_traces"
    for d in "$WORK"/prof/finding_*; do tenprof report "$d" --limit 4 2>&1 | grep -E "^[0-9]+\. |^Findings" | sed "s|^|$(basename "$d"): |"; done
    for d in "$WORK"/prof/finding_*; do echo "== $(basename "$d")"; python3 -c "import sys; from tenprof.store.profile import load_profile; p=load_profile(sys.argv[1]); print(p.sql(\"select name[1:90], count(*), sum(duration_ns) from kernels group by 1 order by 3 desc limit 6\").to_pylist())" "$d"; done
    ;;
  findings17b)  # issue 17: sync causes other than .item(), a one-off stall in a later step
    for f in ${SYNC_PAIRS:-sync_in_loop sync_tolist sync_mask sync_explicit}; do
      record "finding_${f}" examples/findings/$f.py --steps 8
      record "finding_${f}_fixed" examples/findings/$f.py --steps 8 --fixed
    done
    record finding_slow_step examples/findings/slow_step.py --steps 12
    record finding_slow_step_fixed examples/findings/slow_step.py --steps 12 --fixed
    mkdir -p "$WORK/prof/torch_traces"
    ( cd "$REPO" && PYTHONPATH="$REPO/examples/findings:$PYTHONPATH" python3 benchmarks/torch_profiler_run.py "$WORK/prof/torch_traces/slow_step.json" examples/findings/slow_step.py --steps 12 ) > "$WORK/logs/tp_slow_step.log" 2>&1
    gzip -f "$WORK"/prof/torch_traces/*.json
    ls -la "$WORK/prof/torch_traces"
    for d in "$WORK"/prof/finding_*; do tenprof report "$d" --limit 4 2>&1 | grep -E "^[0-9]+\. |^Findings|^Overhead|Overhead" | sed "s|^|$(basename "$d"): |"; done
    ;;
  findings17c)  # issue 17: launch-bound fixed without changing the work (the step replayed as a CUDA graph)
    record finding_launch_graph examples/findings/launch_graph.py --steps 12
    record finding_launch_graph_fixed examples/findings/launch_graph.py --steps 12 --fixed
    for d in "$WORK"/prof/finding_launch_graph*; do tenprof report "$d" --limit 4 2>&1 | grep -E "^[0-9]+\. |^Findings|Overhead" | sed "s|^|$(basename "$d"): |"; done
    ;;
  host19)  # issue 19: the host sampler on the idle-gaps pair (5 ms of host work per step)
    record finding_host_gaps_sampled examples/findings/host_gaps.py --steps 12
    record finding_host_gaps_sampled_fixed examples/findings/host_gaps.py --steps 12 --fixed
    for d in "$WORK"/prof/finding_host_gaps_sampled*; do tenprof report "$d" --limit 4 2>&1 | sed -n '/^Findings/,/^tenprof/p' | head -n 14 | sed "s|^|$(basename "$d"): |"; done
    ;;
  loader19)  # issue 19: slow input pipelines: an 8 ms collate in the script's process, 2 workers with a slow __getitem__, the control
    record finding_slow_collate examples/findings/slow_loader.py
    record finding_slow_workers examples/findings/slow_loader.py --workers 2
    record finding_slow_loader_fixed examples/findings/slow_loader.py --fixed
    record finding_sync_explicit_sampled examples/findings/sync_explicit.py
    for d in "$WORK"/prof/finding_slow_* "$WORK"/prof/finding_sync_explicit_sampled; do tenprof report "$d" --limit 4 2>&1 | sed -n '/^Findings/,/^tenprof/p' | head -n 24 | sed "s|^|$(basename "$d"): |"; done
    ;;
  user20)  # issue 20: kernels launched outside torch ops (a Triton gather, a CUDA extension), and the launch wrapper's cost
    record user_kernels examples/user_kernels.py
    tenprof report "$WORK/prof/user_kernels" --limit 3 2>&1 | head -n 60
    python3 benchmarks/triton_launch_overhead.py --launches 20000 --repeats 3 --json "$OUT/triton_launch_overhead.json" 2>&1 | tail -n 8
    ;;
  user20d)  # issue 20: only the timeline recording of examples/user_kernels.py (tests/data/user_kernels)
    record user_kernels examples/user_kernels.py
    tenprof report "$WORK/prof/user_kernels" --limit 8 2>&1 | grep -E "Attribution|user kernel|no op"
    ;;
  user20e)  # issue 20: launches of an extension built before the run and of a library loaded by bare name
    python3 -m pytest -q -m gpu tests/gpu/test_gpu_prebuilt_launches.py -p no:cacheprovider 2>&1 | tee "$OUT/prebuilt.txt" | tail -n 25
    ;;
  user20b)  # issue 20: counters and stalls of the script's own kernels (replayed as "(user kernel) NAME" signatures)
    ( cd "$REPO" && tenprof run --passes timeline,counters,stalls --limit 12 -o "$WORK/prof/user_kernels_stalls" examples/user_kernels.py --steps 3 ) > "$WORK/logs/user_kernels_stalls.log" 2>&1
    echo "exit=$?" >> "$WORK/logs/user_kernels_stalls.log"
    grep -v "^==PROF==" "$WORK/logs/user_kernels_stalls.log" | tail -n 60 | cut -c1-200
    passes "$WORK/prof/user_kernels_stalls"
    rm -f "$WORK"/prof/user_kernels_stalls/*/raw/counters.ncu-rep
    du -sh "$WORK/prof/user_kernels_stalls"
    ;;
  user20c)  # issue 20: the tensors pass and the tensor stall cost on the script's own kernels
    record_cost user_kernels examples/user_kernels.py --steps 2
    ( cd "$REPO" && tenprof report "$WORK/prof/cost_user_kernels" 2>&1 | sed -n '/[Tt]ensor stall cost/,$p' | head -n 40 )
    ( cd "$REPO" && tenprof report "$WORK/prof/cost_user_kernels" 2>&1 | grep -i -A6 "never read\|dead" | head -n 20 )
    du -sh "$WORK/prof/cost_user_kernels"
    ;;
  ranks19)  # issue 19: NPROC ranks (4) under torchrun, rank SLOW (2) has an input pipeline sleeping 30 ms a step
    nvidia-smi -L
    ( cd "$REPO" && tenprof run -l "python3 -m torch.distributed.run --nproc-per-node ${NPROC:-4}" --limit 6 -o "$WORK/prof/ranks_slow_loader" examples/ddp_train.py --slow-loader-rank ${SLOW:-2} --loader-sleep-ms 30 ) > "$WORK/logs/ranks_slow_loader.log" 2>&1
    echo "exit=$?" >> "$WORK/logs/ranks_slow_loader.log"
    grep -v "^W1126\|USDT" "$WORK/logs/ranks_slow_loader.log" | grep -iE "straggl|behind|more per step|exit=|rank" | head -n 30
    tenprof report "$WORK/prof/ranks_slow_loader" --rank ${SLOW:-2} --limit 3 2>&1 | sed -n '/^Findings/,/^tenprof/p' | head -n 20
    du -sh "$WORK"/prof/ranks_slow_loader
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
  compiled)  # torch.compile: small MLP, GPT-2 default and reduce-overhead (tests/data/compiled/*)
    for spec in "mlp default" "gpt2 default" "gpt2 reduce-overhead"; do
      set -- $spec "$@"; model=$1; mode=$2; shift 2
      name="compiled_${model}_${mode//-/_}"
      # GPT-2 default: only steps 2-3 are recorded (its compile step alone makes an 18 MB profile)
      sched=""; [ "$model" = gpt2 ] && [ "$mode" = default ] && sched="--schedule wait=1,warmup=1,active=2"
      # --compiled-lines: the fixtures' tests read each generated kernel's source lines (Inductor's origin comments)
      ( cd "$REPO" && /usr/bin/time -f "wall_s=%e" tenprof run --quiet --compiled-lines $sched -o "$WORK/prof/$name" examples/compiled_train.py --model "$model" --mode "$mode" ) > "$WORK/logs/$name.log" 2>&1
      echo "exit=$?" >> "$WORK/logs/$name.log"
      tail -n 4 "$WORK/logs/$name.log"
      tenprof report "$WORK/prof/$name" --limit 6 2>&1 | sed -n '/^Compiled code/,/^$/p' | head -n 40 | tee "$OUT/$name.txt"
      passes "$WORK/prof/$name"
      # the fixtures keep the tables and the generated code, not the large Kineto trace
      rm -f "$WORK/prof/$name"/timeline/raw/kineto_trace.json* "$WORK/prof/$name"/timeline/raw/callsites.json.gz
      du -sh "$WORK/prof/$name"
    done
    ;;
  compiled_autotune)  # torch.compile mode=max-autotune on the MLP (Triton GEMM templates); autotuning not recorded
    ( cd "$REPO" && /usr/bin/time -f "wall_s=%e" timeout "${AUTOTUNE_LIMIT_S:-300}" tenprof run --quiet --compiled-lines --schedule wait=2,warmup=1,active=2 -o "$WORK/prof/compiled_mlp_max_autotune" examples/compiled_train.py --model mlp --mode max-autotune ) > "$WORK/logs/compiled_mlp_max_autotune.log" 2>&1
    echo "exit=$?" >> "$WORK/logs/compiled_mlp_max_autotune.log"
    tail -n 4 "$WORK/logs/compiled_mlp_max_autotune.log"
    tenprof report "$WORK/prof/compiled_mlp_max_autotune" --limit 6 2>&1 | sed -n '/^Compiled code/,/^$/p' | head -n 40 | tee "$OUT/compiled_mlp_max_autotune.txt"
    passes "$WORK/prof/compiled_mlp_max_autotune"
    rm -f "$WORK"/prof/compiled_mlp_max_autotune/timeline/raw/kineto_trace.json* "$WORK"/prof/compiled_mlp_max_autotune/timeline/raw/callsites.json.gz
    du -sh "$WORK/prof/compiled_mlp_max_autotune"
    ;;
  compiled_stalls)  # timeline + counters + stalls (one ncu run) on the compiled MLP: generated kernels replayed
    # logs go straight to $OUT: a call cut off by its time limit still shows how far ncu got
    ( cd "$REPO" && /usr/bin/time -f "wall_s=%e" timeout "${STALLS_LIMIT_S:-400}" tenprof run --quiet --compiled-lines --passes timeline,counters,stalls -o "$WORK/prof/compiled_mlp_stalls" examples/compiled_train.py --model mlp --steps 2 --warmup 1 ) > "$OUT/compiled_mlp_stalls.log" 2>&1
    echo "exit=$?" >> "$OUT/compiled_mlp_stalls.log"
    grep -v "^==PROF==" "$OUT/compiled_mlp_stalls.log" | tail -n 8
    grep -c "==PROF== Profiling" "$WORK"/prof/compiled_mlp_stalls/*/raw/ncu.log 2>/dev/null
    passes "$WORK/prof/compiled_mlp_stalls"
    tenprof report "$WORK/prof/compiled_mlp_stalls" --limit 6 > "$OUT/compiled_mlp_stalls.txt" 2>&1
    sed -n '/^Warp stalls/,$p' "$OUT/compiled_mlp_stalls.txt" | head -n 60
    rm -f "$WORK"/prof/compiled_mlp_stalls/*/raw/counters.ncu-rep "$WORK"/prof/compiled_mlp_stalls/timeline/raw/kineto_trace.json* "$WORK"/prof/compiled_mlp_stalls/timeline/raw/callsites.json.gz
    du -sh "$WORK"/prof/compiled_mlp_stalls/*
    ;;
  compiled_trace)  # a plain torch.profiler trace of the compiled MLP (kernels declaring FLOPs/bytes), imported
    ( cd "$REPO" && TORCHINDUCTOR_BENCHMARK_KERNEL=1 python3 examples/compiled_torch_profiler.py -o "$WORK/prof/compiled_trace.json.gz" ) > "$WORK/logs/compiled_trace.log" 2>&1
    echo "exit=$?" >> "$WORK/logs/compiled_trace.log"
    tail -n 3 "$WORK/logs/compiled_trace.log"
    ls -la "$WORK/prof/compiled_trace.json.gz"
    tenprof import "$WORK/prof/compiled_trace.json.gz" -o "$WORK/prof/compiled_trace_imported" > /dev/null 2>&1; echo "import exit=$?"
    tenprof report "$WORK/prof/compiled_trace_imported" --limit 6 2>&1 | sed -n '/^Compiled code/,/^$/p' | head -n 40 | tee "$OUT/compiled_trace_imported.txt"
    ;;
  ondemand41)  # issue 41: the listener's cost (the MLP's plain loop against the same under --on-demand, alternated, ROUNDS41 rounds); a capture of 5 steps of a running compiled GPT-2 (its report); every rank of a 2-rank torchrun job (NPROC, on the 2-GPU kind); text in $OUT/ondemand41.txt
    N="$OUT/ondemand41.txt"
    M="examples/small_mlp.py --steps 300 --warmup 20"
    for r in $(seq "${ROUNDS41:-3}"); do
      ( cd "$REPO" && taskset -c 0-7 python3 $M ) 2>&1 | grep loop_s | sed 's/^/plain /' >> "$N"
      ( cd "$REPO" && taskset -c 0-7 tenprof run --on-demand $M ) 2>&1 | grep loop_s | sed 's/^/listening /' >> "$N"
      ( cd "$REPO" && taskset -c 0-7 python3 -c "import sys, runpy, tenprof, tenprof.record.inprocess; tenprof.listen(); sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')" $M ) 2>&1 | grep loop_s | sed 's/^/listening+recorder-loaded /' >> "$N"
    done
    ( cd "$REPO" && tenprof run --on-demand examples/compiled_train.py --model gpt2 --steps 3000 ) > "$WORK/logs/od_gpt2.log" 2>&1 &
    sleep 60; P=$(grep -o "tenprof capture [0-9]*" "$WORK/logs/od_gpt2.log" | awk '{print $3}')
    ( cd "$REPO" && tenprof capture "$P" -o "$WORK/prof/od_gpt2" --steps 5 ) >> "$N" 2>&1
    tenprof report "$WORK/prof/od_gpt2" --limit 4 2>&1 | head -n 30 >> "$N"
    wait
    ;;
  listener41)  # issue 41: the listener's cost alone: the MLP's plain loop against the same under --on-demand, STEPS41 steps, alternated ROUNDS41 rounds, each run held to 8 cores; text in $OUT/listener41.txt
    for r in $(seq "${ROUNDS41:-5}"); do
      for how in plain listening; do
        if [ $how = plain ]; then run="python3"; else run="tenprof run --on-demand"; fi
        ( cd "$REPO" && taskset -c 0-7 $run examples/small_mlp.py --steps "${STEPS41:-3000}" --warmup 50 ) 2>&1 | grep loop_s | sed "s/^/$how /" >> "$OUT/listener41.txt"
      done
    done
    ;;
  ondemand41ddp)  # issue 41 on NPROC GPUs (default 2; the nvidia-h200-x2 kind): every rank of a torchrun job captured by one command; text in $OUT/ondemand41.txt
    N="$OUT/ondemand41.txt"
    ( cd "$REPO" && python3 -m torch.distributed.run --nproc-per-node "${NPROC:-2}" -m tenprof run --on-demand examples/ddp_train.py --steps 2000 ) > "$WORK/logs/od_ddp.log" 2>&1 &
    sleep 40; P=$(grep -o "tenprof capture [0-9]*" "$WORK/logs/od_ddp.log" | head -n 1 | awk '{print $3}')
    ( cd "$REPO" && tenprof capture "$P" --all-ranks -o "$WORK/prof/od_ddp" --steps 3 ) >> "$N" 2>&1
    tenprof report "$WORK/prof/od_ddp" --limit 4 2>&1 | head -n 40 >> "$N"
    wait
    ;;
  ranks40)  # issue 40 on NPROC GPUs (default 2; the nvidia-h200-x2 kind): DDP balanced and with rank 1 slowed, recorded with the collectives' args; the merged report's clock shifts, arrivals and bus bandwidth against the link's peak; text in $OUT/ranks40.txt
    N="$OUT/ranks40.txt"; P=${NPROC:-2}
    nvidia-smi topo -m >> "$N" 2>&1
    ( cd "$REPO" && python3 -m torch.distributed.run --nproc-per-node "$P" -m tenprof run --quiet -o "$WORK/prof/ranks40_balanced" examples/ddp_train.py ) > "$WORK/logs/ranks40_balanced.log" 2>&1
    ( cd "$REPO" && python3 -m torch.distributed.run --nproc-per-node "$P" -m tenprof run --quiet -o "$WORK/prof/ranks40_slowed" examples/ddp_train.py --slow-rank 1 ) > "$WORK/logs/ranks40_slowed.log" 2>&1
    ( cd "$REPO" && python3 -m torch.distributed.run --nproc-per-node "$P" -m tenprof run --quiet -o "$WORK/prof/ranks40_oom" examples/ddp_oom_rank.py --oom-rank "${OOM_RANK:-$((P - 1))}" ) > "$WORK/logs/ranks40_oom.log" 2>&1
    echo "== oom (rank ${OOM_RANK:-$((P - 1))} of $P dies of out-of-memory): exit $?" >> "$N"
    tenprof report "$WORK/prof/ranks40_oom" --limit 4 2>&1 | grep -v "USDT" | sed -n '/cut short/,$p' | head -n 30 >> "$N"
    for d in balanced slowed; do
      echo "== $d" >> "$N"
      tenprof report "$WORK/prof/ranks40_$d" --limit 4 2>&1 | grep -v "USDT" | sed -n '/Who arrived/,$p' >> "$N"
      tenprof report "$WORK/prof/ranks40_$d" --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print('shifts', [r['clock_shift_ns'] for r in d['ranks']]); print('arrivals', json.dumps(d['arrivals'])[:1500])" >> "$N" 2>&1
    done
    python3 -c "from tenprof.store.profile import load_profile as L; import sys; c=L(sys.argv[1]).table('collectives'); print(c.num_rows, c.slice(0, 2).to_pylist())" "$WORK/prof/ranks40_balanced/rank00000" >> "$N" 2>&1
    du -sh "$WORK"/prof/ranks40_* >> "$N"
    ;;
  ownprof38)  # a script's own torch.profiler started while tenprof records, on the GPU (tests/gpu/test_gpu_own_profiler.py); text in $OUT/ownprof38.txt
    ( cd "$REPO" && timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_own_profiler.py ) > "$OUT/ownprof38.txt" 2>&1
    ;;
  groups40)  # issue 40 on NPROC GPUs (default 4; the nvidia-h200-x4 kind): the 2D job (examples/parallel_2d.py, TP pairs x DP) balanced, with TP group 1 slowed, and with rank 3 alone slowed; per group who arrived last, shifts and bus bandwidth; text in $OUT/groups40.txt
    N="$OUT/groups40.txt"; P=${NPROC:-4}
    nvidia-smi topo -m >> "$N" 2>&1
    for c in "balanced" "slowtp --slow-tp-group 1" "slowrank --slow-rank 3"; do
      read -r -a A <<< "$c"; name="groups40_${A[0]}"  # not `set --`: that would clobber the task list
      ( cd "$REPO" && timeout 240 python3 -m torch.distributed.run --nproc-per-node "$P" -m tenprof run --quiet -o "$WORK/prof/$name" examples/parallel_2d.py "${A[@]:1}" ) > "$WORK/logs/$name.log" 2>&1
      echo "== $name ($c): exit $?" >> "$N"
      grep loop_s "$WORK/logs/$name.log" >> "$N"
      tenprof report "$WORK/prof/$name" --limit 4 2>&1 | grep -v "USDT" | sed -n '/Who arrived/,$p' >> "$N"
      tenprof report "$WORK/prof/$name" --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print('shifts', [r['clock_shift_ns'] for r in d['ranks']]); print('arrivals', json.dumps(d['arrivals'])[:2500])" >> "$N" 2>&1
    done
    du -sh "$WORK"/prof/groups40_* >> "$N"
    ;;
  ranks)  # DDP on 2 GPUs under torchrun, balanced and with rank 1 slowed (tests/data/ranks/*)
    nvidia-smi -L
    ( cd "$REPO" && tenprof run -l "python3 -m torch.distributed.run --nproc-per-node 2" --limit 8 -o "$WORK/prof/ranks_balanced" examples/ddp_train.py ) > "$WORK/logs/ranks_balanced.log" 2>&1
    echo "exit=$?" >> "$WORK/logs/ranks_balanced.log"
    grep -v "^W1126\|USDT" "$WORK/logs/ranks_balanced.log" | tail -n 40
    ( cd "$REPO" && python3 -m torch.distributed.run --nproc-per-node 2 -m tenprof run -o "$WORK/prof/ranks_slowed" examples/ddp_train.py --slow-rank 1 ) > "$WORK/logs/ranks_slowed.log" 2>&1
    echo "exit=$?" >> "$WORK/logs/ranks_slowed.log"
    tenprof report "$WORK/prof/ranks_slowed" --limit 8 >> "$WORK/logs/ranks_slowed.log" 2>&1
    tenprof report "$WORK/prof/ranks_slowed" --rank 1 --limit 3 > "$WORK/logs/ranks_slowed_rank1.log" 2>&1
    grep -v "^W1126\|USDT" "$WORK/logs/ranks_slowed.log" | tail -n 40
    head -n 30 "$WORK/logs/ranks_slowed_rank1.log"
    du -sh "$WORK"/prof/ranks_*
    ;;
  access_smoke)  # build the access tool and run it once on a small script
    python3 -c "from tenprof.capture.accesses_build import build_access_tool; print(build_access_tool())" 2>&1 | tee "$OUT/accesses_build.txt"
    cat "${TENPROF_CACHE:-$HOME/.cache/tenprof}"/access/build-*/build.log 2>/dev/null | head -40
    ( cd "$REPO" && tenprof run --quiet --passes tensors,accesses -o "$WORK/prof/access_smoke" examples/matmul_add.py --size 256 --steps 2 --dtype float32 ) > "$WORK/logs/access_smoke.log" 2>&1
    echo "exit=$?" >> "$WORK/logs/access_smoke.log"
    tail -n 20 "$WORK/logs/access_smoke.log"
    passes "$WORK/prof/access_smoke"
    head -n 12 "$WORK"/prof/access_smoke/accesses/raw/access-launches-*.tsv | cut -c1-200
    cat "$WORK"/prof/access_smoke/accesses/raw/access-log-*.txt 2>/dev/null | head
    ;;
  access_planted)  # planted workloads for the tensor stall cost (tests/data/tensor_cost/*), kept small
    export ACCESS_EVERY=1024
    record_cost transposed examples/tensor_cost/transposed.py
    record_cost embedding_random examples/tensor_cost/embedding.py --order random
    record_cost embedding_sorted examples/tensor_cost/embedding.py --order sorted
    record_cost matmul4096 examples/matmul_add.py --size 4096 --steps 3
    record_cost matmul4096_fp32 examples/matmul_add.py --size 4096 --steps 3 --dtype float32
    for name in transposed embedding_random; do python3 scripts/access_join_check.py "$WORK/prof/cost_$name" 2>&1 | tee "$WORK/logs/diag_$name.log" | head -n 30; done
    du -sh "$WORK"/prof/cost_*
    unset ACCESS_EVERY
    ;;
  access_embedding)  # only the embedding pairs: 16-float rows, and 1-float rows (one lane, one row)
    export ACCESS_EVERY=1024
    record_cost embedding16_random examples/tensor_cost/embedding.py --order random --dim 16 --rows 4194304
    record_cost embedding16_sorted examples/tensor_cost/embedding.py --order sorted --dim 16 --rows 4194304
    record_cost embedding_random examples/tensor_cost/embedding.py --order random
    record_cost embedding_sorted examples/tensor_cost/embedding.py --order sorted
    for d in "$WORK"/prof/cost_embedding*; do python3 -c "import sys; from tenprof.store.profile import load_profile; p=load_profile(sys.argv[1]); print(sys.argv[1].rsplit('/',1)[-1], p.sql(\"select name[1:50], count(*), avg(duration_ns) from kernels group by 1 order by 3 desc limit 2\").to_pylist())" "$d"; done
    unset ACCESS_EVERY
    ;;
  access_embedding1)  # only the 1-float-row pair (the default)
    export ACCESS_EVERY=1024
    record_cost embedding_random examples/tensor_cost/embedding.py --order random
    record_cost embedding_sorted examples/tensor_cost/embedding.py --order sorted
    for d in "$WORK"/prof/cost_embedding*; do python3 -c "import sys; from tenprof.store.profile import load_profile; p=load_profile(sys.argv[1]); print(sys.argv[1].rsplit('/',1)[-1], p.sql(\"select name[1:50], count(*), avg(duration_ns) from kernels group by 1 order by 3 desc limit 2\").to_pylist())" "$d"; done
    unset ACCESS_EVERY
    ;;
  access_diag)  # the stalls x accesses join on two planted workloads, PC offsets side by side
    for name in transposed embedding_random; do
      case $name in
      transposed) record_cost transposed examples/tensor_cost/transposed.py ;;
      embedding_random) record_cost embedding_random examples/tensor_cost/embedding.py --order random ;;
      esac
      python3 scripts/access_join_check.py "$WORK/prof/cost_$name" 2>&1 | tee "$WORK/logs/diag_$name.log"
    done
    rm -f "$WORK"/prof/cost_*/accesses/raw/*.bin
    ;;
  patterns21)  # issue 21: planted access patterns (tests/data/tensor_cost/patterns) and what the analysis says
    record_cost patterns examples/tensor_cost/patterns.py
    python3 scripts/access_patterns_dump.py "$WORK/prof/cost_patterns" 2>&1 | tee "$OUT/patterns_dump.txt" | head -n 80
    ( cd "$REPO" && tenprof report "$WORK/prof/cost_patterns" --limit 10 2>&1 | sed -n '/^Tensors the memory stalls/,$p' | tee "$OUT/patterns_report.txt" )
    du -sh "$WORK/prof/cost_patterns"
    ;;
  patterns21b)  # issue 21: the patterns without the stalls pass (the report's uncoalesced reads), and a tiny run's wall time
    ( cd "$REPO" && tenprof run --limit 4 --passes timeline,tensors,accesses -o "$WORK/prof/patterns_noncu" examples/tensor_cost/patterns.py ) > "$WORK/logs/patterns_noncu.log" 2>&1
    echo "exit=$?" >> "$WORK/logs/patterns_noncu.log"
    sed -n '/^Uncoalesced/,/^$/p' "$WORK/logs/patterns_noncu.log" | tee "$OUT/patterns_noncu.txt"
    grep -E "where the time went|exit=" "$WORK/logs/patterns_noncu.log" | tee -a "$OUT/patterns_noncu.txt"
    printf 'import torch\nx = torch.ones(3, device="cuda")\nfor _ in range(3):\n    y = x + 1\n' > "$WORK/tiny.py"
    for i in 1 2 3; do /usr/bin/time -f "tiny_run_wall_s=%e" tenprof run --quiet -o "$WORK/tiny_$i" "$WORK/tiny.py" 2>&1 | grep wall_s | tee -a "$OUT/patterns_noncu.txt"; done
    rm -rf "$WORK/prof/patterns_noncu"
    ;;
  diff22)  # issue 22: the same MLP eager and compiled (tests/data/compiled/mlp_eager beside mlp_default)
    record compiled_mlp_eager examples/compiled_train.py --model mlp --mode eager
    record compiled_mlp_default examples/compiled_train.py --model mlp --mode default
    ;;
  diff22cpu)  # issue 22: a CPU run under this machine's torch (2.11), to diff against one under CI's torch (2.13)
    ( cd "$REPO" && CUDA_VISIBLE_DEVICES= tenprof run --quiet --limit 4 -o "$WORK/prof/matmul_cpu_torch211" examples/matmul_add.py --size 256 --steps 6 ) > "$WORK/logs/matmul_cpu_torch211.log" 2>&1
    echo "exit=$?" | tee -a "$WORK/logs/matmul_cpu_torch211.log"
    python3 -c "import json; m = json.load(open('$WORK/prof/matmul_cpu_torch211/meta.json')); print(m['torch_version'], m['gpus'])"
    ;;
  access_cost)  # GPT-2 one step: un-profiled, tensors, tensors+accesses, compute-sanitizer memcheck
    cd "$REPO"
    for mode in plain tensors accesses memcheck; do
      case $mode in
      plain) cmd=(python3 examples/gpt2_train.py --steps 1 --warmup 1) ;;
      tensors) cmd=(tenprof run --quiet --passes tensors -o "$WORK/gpt2_t" examples/gpt2_train.py --steps 1 --warmup 1) ;;
      accesses) cmd=(tenprof run --quiet --passes tensors,accesses -o "$WORK/gpt2_ta" examples/gpt2_train.py --steps 1 --warmup 1) ;;
      memcheck) cmd=(compute-sanitizer --tool memcheck python3 examples/gpt2_train.py --steps 1 --warmup 1) ;;
      esac
      /usr/bin/time -f "${mode}_wall_s=%e" "${cmd[@]}" 2>&1 | grep -E "loop_s|wall_s|ERROR SUMMARY" | sed "s/^/$mode: /" | tee -a "$OUT/access_cost.txt"
    done
    passes "$WORK/gpt2_ta" | tee -a "$OUT/access_cost.txt"
    cd - > /dev/null
    ;;
  access_gpt2)  # GPT-2 one step with every pass: the top tensors by stall cost (then the report's last section)
    ( cd "$REPO" && /usr/bin/time -f "all_wall_s=%e" tenprof run --limit 1 --passes timeline,tensors,stalls,accesses -o "$WORK/prof/cost_gpt2" examples/gpt2_train.py --steps 1 --warmup 0 ) > "$WORK/logs/cost_gpt2.log" 2>&1
    grep -E "all_wall_s|where the time went|loop_s" "$WORK/logs/cost_gpt2.log" | tee "$OUT/gpt2_all_passes.txt"
    passes "$WORK/prof/cost_gpt2"
    head -n 25 "$WORK/prof/cost_gpt2/tensor_stall_cost.csv" | cut -c1-260
    tenprof report "$WORK/prof/cost_gpt2" --limit 8 2>&1 | sed -n '/^Tensors the memory stalls/,$p' | tee "$OUT/gpt2_stall_cost_report.txt"
    python3 scripts/access_patterns_dump.py "$WORK/prof/cost_gpt2" --limit 30 2>&1 | tee "$OUT/gpt2_patterns.txt" | head -n 40
    [ -n "${KEEP_GPT2:-}" ] || rm -rf "$WORK/prof/cost_gpt2"  # 30 MB: too big to bring back
    rm -f "$WORK"/prof/cost_gpt2/*/raw/counters.ncu-rep
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
  access_split)  # issue 21: where the access run's step goes: sanitizer callbacks alone, patched without buffers, recording
    cd "$REPO"
    for mode in plain tensors nopatch norecord full patchall memcheck; do
      case $mode in
      plain) cmd=(python3 examples/gpt2_train.py --steps 1 --warmup 1) ;;
      tensors) cmd=(tenprof run --quiet --passes tensors -o "$WORK/split_t" examples/gpt2_train.py --steps 1 --warmup 1) ;;
      full) cmd=(tenprof run --quiet --passes tensors,accesses -o "$WORK/split_full" examples/gpt2_train.py --steps 1 --warmup 1) ;;
      patchall) cmd=(env TENPROF_ACCESS_PATCH_ALL=1 tenprof run --quiet --passes tensors,accesses -o "$WORK/split_all" examples/gpt2_train.py --steps 1 --warmup 1) ;;
      memcheck) cmd=(compute-sanitizer --tool memcheck python3 examples/gpt2_train.py --steps 1 --warmup 1) ;;
      *) cmd=(env TENPROF_ACCESS_DIAGNOSE=$mode tenprof run --quiet --passes tensors,accesses -o "$WORK/split_$mode" examples/gpt2_train.py --steps 1 --warmup 1) ;;
      esac
      "${cmd[@]}" 2>&1 | grep -E "^loop_s" | sed "s/^/$mode: /" | tee -a "$OUT/access_split.txt"
    done
    for d in "$WORK/split_full" "$WORK/split_all"; do passes "$d" | grep accesses | sed "s|^|$(basename $d): |" | tee -a "$OUT/access_split.txt"; cat "$d"/accesses/raw/access-log-*.txt 2>/dev/null | head -5; done
    cd - > /dev/null
    ;;
  access_lazy)  # issue 21: launches recorded with modules patched lazily against every module patched (per-launch records)
    cd "$REPO"
    for mode in full patchall; do
      extra=(); [ $mode = patchall ] && extra=(env TENPROF_ACCESS_PATCH_ALL=1)
      "${extra[@]}" tenprof run --quiet --passes tensors,accesses -o "$WORK/lazy_$mode" examples/gpt2_train.py --steps 1 --warmup 1 2>&1 | grep loop_s
      cp "$WORK/lazy_$mode"/accesses/raw/access-launches-*.tsv "$OUT/launches_$mode.tsv"
      cat "$WORK/lazy_$mode"/accesses/raw/access-log-*.txt | head -5
    done
    cd - > /dev/null
    ;;
  page23)  # issue 23: GPT-2 small, every pass, the report page written by the run (docs/report_page/gpt2_all.html)
    ( cd "$REPO" && /usr/bin/time -f "page23_wall_s=%e" tenprof run --html --limit 3 --passes all -o "$WORK/prof/gpt2_all" examples/gpt2_train.py --steps 1 --warmup 1 ) > "$WORK/logs/gpt2_all.log" 2>&1
    echo "exit=$?" >> "$WORK/logs/gpt2_all.log"
    grep -E "page23_wall_s|where the time went|report page|failed|exit=" "$WORK/logs/gpt2_all.log" | tee "$OUT/page23.txt"
    passes "$WORK/prof/gpt2_all" | tee -a "$OUT/page23.txt"
    cp "$WORK/prof/gpt2_all/report.html" "$OUT/gpt2_all.html" 2>/dev/null
    ls -la "$OUT/gpt2_all.html" "$WORK/prof/gpt2_all" | tee -a "$OUT/page23.txt"
    rm -rf "$WORK/prof/gpt2_all"
    ;;
  gpu22)  # issue 22 and the issue 21 review: diff on a pair recorded here, and the access pass's GPU tests
    python3 -m pytest -q -m gpu tests/gpu/test_gpu_diff.py tests/gpu/test_gpu_accesses.py -p no:cacheprovider 2>&1 | tee "$OUT/gpu22.txt" | tail -n 15
    ;;
  perf25)  # issue 25: measured peaks, GPT-2 small bf16 with tokens per step, GEMM FLOPs against ncu, user metrics
    python3 benchmarks/peaks.py | tee "$OUT/peaks.json"
    record gpt2_bf16 examples/gpt2_train.py --steps 3 --warmup 2
    tenprof report "$WORK/prof/gpt2_bf16" --limit 12 2>&1 | sed -n '/Performance model/,/not modelled/p' | tee "$OUT/gpt2_bf16_model.txt"
    tenprof report "$WORK/prof/gpt2_bf16" --json > "$OUT/gpt2_bf16_report.json" 2>> "$WORK/logs/gpt2_bf16.log"
    ( cd "$REPO" && tenprof run --quiet -o "$WORK/prof/gemms" examples/gemms.py --steps 3 ) > "$WORK/logs/gemms.log" 2>&1
    tenprof report "$WORK/prof/gemms" --limit 6 2>&1 | sed -n '/Performance model/,/not modelled/p' | tee "$OUT/gemms_model.txt"
    TENPROF_EVIDENCE="$OUT/gemm_flops.json" python3 -m pytest -q -m gpu tests/gpu/test_gpu_flops.py tests/gpu/test_user_metrics_gpu.py -p no:cacheprovider 2>&1 | tee "$OUT/perf25_tests.txt" | tail -n 25
    record finding_odd_gemm examples/findings/odd_gemm.py
    record finding_odd_gemm_fixed examples/findings/odd_gemm.py --fixed
    for d in "$WORK"/prof/finding_odd_gemm*; do tenprof report "$d" --limit 4 2>&1 | sed -n '/^Findings/,/^tenprof/p' | head -n 20 | sed "s|^|$(basename "$d"): |"; tenprof report "$d" --limit 4 2>&1 | sed -n '/Performance model/,/not modelled/p'; done | tee "$OUT/odd_gemm.txt"
    python3 -c "import sys; from tenprof.store.profile import load_profile; p=load_profile(sys.argv[1]); print(p.sql('select device, count(*), min(sm_clock_mhz), max(sm_clock_mhz), max(power_w), max(temperature_c), bit_or(clock_reasons) from gpu_samples group by 1').to_pylist())" "$WORK/prof/gpt2_bf16" | tee -a "$OUT/perf25_tests.txt"
    ;;
  rec25)  # issue 25's fixtures (tests/data): GPT-2 small bf16 with tokens per step, the odd-GEMM pair
    record gpt2_bf16 examples/gpt2_train.py --steps 3 --warmup 2
    record finding_odd_gemm examples/findings/odd_gemm.py
    record finding_odd_gemm_fixed examples/findings/odd_gemm.py --fixed
    ;;
  gputests)
    python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee "$OUT/gputests.txt" | tail -n 15
    ;;
  teardowntest36)  # issue 36: the GPU test that TENPROF_TEARDOWN_AT_STOP=1 leaves no CUPTI teardown waiting at any session's start; text in $OUT/teardowntest36.txt
    python3 -m pytest -q -s -m gpu -p no:cacheprovider tests/gpu/test_gpu_capture.py -k teardowns 2>&1 | tee "$OUT/teardowntest36.txt" | tail -n 15
    ;;
  gputests_cupti)  # issue 38: the timeline's GPU tests (capture, native lines: eager, compiled, CUDA graphs, threads; prebuilt launches; the script's own profiler) with tenprof's own CUPTI client as `tenprof run`'s default; text in $OUT/gputests_cupti.txt
    TENPROF_CAPTURE=native-cupti TENPROF_NATIVE_GPU=1 timeout "${GPUTESTS_TIMEOUT:-400}" python3 -m pytest -q -s -m gpu -p no:cacheprovider \
      tests/gpu/test_gpu_capture.py tests/gpu/test_gpu_native_lines.py tests/gpu/test_gpu_prebuilt_launches.py tests/gpu/test_gpu_own_profiler.py 2>&1 | tee "$OUT/gputests_cupti.txt" | tail -n 25
    ;;
  gputests_native)  # issue 38: the GPU tests with the native capture as `tenprof run`'s default
    TENPROF_CAPTURE=native TENPROF_NATIVE_GPU=1 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee "$OUT/gputests_native.txt" | tail -n 25
    ;;
  corpus36rec)  # issue 36: the corpus pairs new in this issue (and two made larger), recorded with tenprof run
    record finding_slow_transform examples/findings/slow_transform.py --steps 10
    record finding_slow_transform_fixed examples/findings/slow_transform.py --steps 10 --fixed
    record finding_few_workers examples/findings/slow_transform.py --steps 10 --workers 1
    for f in python_elements foreach_off empty_cache channels_last graph_break; do
      record "finding_${f}" examples/findings/$f.py
      record "finding_${f}_fixed" examples/findings/$f.py --fixed
    done
    for d in "$WORK"/prof/finding_*; do tenprof report "$d" --limit 3 2>&1 | grep -E "^[0-9]+\. " | sed "s|^|$(basename "$d"): |"; done | tee "$OUT/corpus36rec.txt"
    tar -C "$WORK" -czf "$OUT/corpus36rec.tgz" prof logs
    ;;
  generate36)  # issue 36: GPT-2 generate() without steps, with tenprof run and with plain torch.profiler (with_stack)
    ( cd "$REPO" && tenprof run --quiet -o "$WORK/prof/gpt2_generate" examples/gpt2_generate.py --tokens 48 ) > "$WORK/logs/gpt2_generate.log" 2>&1
    echo "exit=$?" >> "$WORK/logs/gpt2_generate.log"
    tenprof report "$WORK/prof/gpt2_generate" --limit 4 2>&1 | head -n 60 | tee "$OUT/gpt2_generate.txt"
    mkdir -p "$WORK/prof/torch_traces"
    ( cd "$REPO" && python3 benchmarks/torch_profiler_run.py --stack "$WORK/prof/torch_traces/gpt2_generate_stack.json" examples/gpt2_generate.py --tokens 48 ) > "$WORK/logs/tp_gpt2_generate.log" 2>&1
    ( cd "$REPO" && python3 benchmarks/torch_profiler_run.py "$WORK/prof/torch_traces/gpt2_generate.json" examples/gpt2_generate.py --tokens 48 ) >> "$WORK/logs/tp_gpt2_generate.log" 2>&1
    gzip -f "$WORK"/prof/torch_traces/*.json
    for t in gpt2_generate_stack gpt2_generate; do
      tenprof import "$WORK/prof/torch_traces/$t.json.gz" -o "$WORK/prof/${t}_imported" > /dev/null 2>&1
      echo "== the torch.profiler trace $t, imported" >> "$OUT/gpt2_generate.txt"
      tenprof report "$WORK/prof/${t}_imported" --limit 4 2>&1 | grep -E "^[0-9]+\. |   (seen|fix)|^Steps|^Step time|^  [a-zA-Z]" | head -n 45 >> "$OUT/gpt2_generate.txt"
      rm -rf "$WORK/prof/${t}_imported"
    done
    [ "$(stat -c %s "$WORK/prof/torch_traces/gpt2_generate.json.gz")" -lt 4000000 ] && cp "$WORK/prof/torch_traces/gpt2_generate.json.gz" "$OUT/"
    du -sh "$WORK"/prof/gpt2_generate "$WORK"/prof/torch_traces >> "$OUT/gpt2_generate.txt"; rm -rf "$WORK"/prof/gpt2_generate "$WORK"/prof/torch_traces  # too large to bring back (163 MB)
    ;;
  timed36)  # issue 36 section 3: the timed steps with everything off, against the plain loop (TIMED_WORKLOADS, TIMED_REPEATS, TIMED_DEADLINE_MIN)
    ( cd "$REPO" && tenprof run --quiet -o "$WORK/prof/overhead36_mlp" examples/small_mlp.py --steps 20 --warmup 2 ) > "$WORK/logs/overhead36_mlp.log" 2>&1
    tenprof report "$WORK/prof/overhead36_mlp" --limit 3 > "$OUT/overhead36_mlp.txt" 2>&1
    for f in empty_cache; do
      record "finding_${f}" examples/findings/$f.py
      record "finding_${f}_fixed" examples/findings/$f.py --fixed
      tenprof report "$WORK/prof/finding_${f}" --limit 3 > "$OUT/finding_${f}.txt" 2>&1
      tenprof report "$WORK/prof/finding_${f}_fixed" --limit 3 > "$OUT/finding_${f}_fixed.txt" 2>&1
    done
    python3 benchmarks/overhead.py --workloads "${TIMED_WORKLOADS:-mlp,gpt2-fp32,gpt2-compiled}" --configs plain,tenprof-timed --repeats "${TIMED_REPEATS:-2}" --deadline-min "${TIMED_DEADLINE_MIN:-6.5}" --keep-profiles "$WORK/timed" --json "$OUT/" 2>&1 | tee "$OUT/timed36.txt"
    for d in "$WORK"/timed/*/tenprof-timed-r*; do
      [ -d "$d" ] && tenprof report "$d" --limit 4 > "$OUT/report-$(basename "$(dirname "$d")")-$(basename "$d").txt" 2>&1
    done
    tar -C "$WORK" -czf "$OUT/timed36.tgz" prof/overhead36_mlp prof/finding_empty_cache prof/finding_empty_cache_fixed logs
    ;;
  diag36)  # issue 36 section 3: where the timed steps' remaining cost is (torch.profiler toggled off alone; tenprof light), and new corpus recordings
    D="$OUT/diag36.txt"  # appended as it goes: a call cut short still brings it back
    { python3 benchmarks/toggle_probe.py --workload mlp --steps 50 --rounds 3; python3 benchmarks/toggle_probe.py --workload gpt2-compiled --steps 8 --rounds 3; } >> "$D" 2>&1
    ( cd "$REPO" && tenprof run --quiet --overhead-steps 6 -o "$WORK/prof/mlp200" examples/small_mlp.py --steps 200 --warmup 10 ) > "$WORK/logs/mlp200.log" 2>&1
    steps_of "$WORK/prof/mlp200" >> "$D" 2>&1
    ( cd "$REPO" && TENPROF_HOST_SAMPLE_HZ=0 tenprof run --quiet --no-lines --no-shapes --no-memory --overhead-steps 6 -o "$WORK/prof/compiled_light" examples/compiled_train.py --model gpt2 --mode default --steps 20 --warmup 3 ) > "$WORK/logs/compiled_light.log" 2>&1
    steps_of "$WORK/prof/compiled_light" >> "$D" 2>&1
    ( cd "$REPO/examples/findings" && for f in "" --fixed; do TENPROF_CORPUS_TIME=1 python3 graph_break_host.py --steps 12 $f; done ) >> "$D" 2>&1
    record finding_graph_break_host examples/findings/graph_break_host.py > /dev/null
    record finding_graph_break_host_fixed examples/findings/graph_break_host.py --fixed > /dev/null
    for d in "$WORK"/prof/finding_*; do tenprof report "$d" --limit 3 2>&1 | grep -E "^[0-9]+\. " | sed "s|^|$(basename "$d"): |"; done >> "$D"
    tar -C "$WORK" -czf "$OUT/diag36.tgz" prof/finding_graph_break_host prof/finding_graph_break_host_fixed logs
    ( cd "$REPO" && tenprof run --quiet --overhead-steps 6 -o "$WORK/prof/compiled_full" examples/compiled_train.py --model gpt2 --mode default --steps 20 --warmup 3 ) > "$WORK/logs/compiled_full.log" 2>&1
    steps_of "$WORK/prof/compiled_full" >> "$D" 2>&1
    tenprof report "$WORK/prof/compiled_full" --limit 3 2>&1 | head -n 60 >> "$D"
    rm -rf "$WORK/prof/mlp200" "$WORK/prof/compiled_light" "$WORK/prof/compiled_full"
    ;;
  final36)  # issue 36: the host-bound graph-break pair, and the run's timed steps against the plain loop (TIMED_WORKLOADS, TIMED_REPEATS, TIMED_DEADLINE_MIN); all text in $OUT/final36.txt
    F="$OUT/final36.txt"
    ( cd "$REPO/examples/findings" && for f in "" --fixed; do TENPROF_CORPUS_TIME=1 python3 graph_break_host.py --steps 12 $f; done ) >> "$F" 2>&1
    record finding_graph_break_host examples/findings/graph_break_host.py > /dev/null
    record finding_graph_break_host_fixed examples/findings/graph_break_host.py --fixed > /dev/null
    for d in "$WORK"/prof/finding_*; do tenprof report "$d" --limit 3 2>&1 | grep -E "^[0-9]+\. |   seen: " | sed "s|^|$(basename "$d"): |"; done >> "$F"
    tar -C "$WORK" -czf "$OUT/final36.tgz" prof logs
    python3 benchmarks/overhead.py --workloads "${TIMED_WORKLOADS:-gpt2-compiled}" --configs plain,tenprof-timed --repeats "${TIMED_REPEATS:-3}" --deadline-min "${TIMED_DEADLINE_MIN:-6.5}" --keep-profiles "$WORK/timed" --json "$OUT/" >> "$F" 2>&1
    for d in "$WORK"/timed/*/tenprof-timed-r0; do
      [ -d "$d" ] && { echo "== $d"; tenprof report "$d" --limit 2 2>&1 | sed -n '/^Overhead/,/^Per step: where/p'; } >> "$F"
    done
    rm -rf "$WORK/timed"
    ;;
  last36)  # issue 36: the timed steps of MLP and fp32 GPT-2 against the plain loop, torch.profiler toggled off without shapes and memory, and corpus traces; all text in $OUT/last36.txt
    L="$OUT/last36.txt"
    python3 benchmarks/toggle_probe.py --workload mlp --steps 50 --rounds 3 --record ops >> "$L" 2>&1
    python3 benchmarks/overhead.py --workloads mlp,gpt2-fp32 --configs plain,tenprof-timed --repeats 3 --deadline-min 4 --json "$OUT/" >> "$L" 2>&1
    python3 benchmarks/corpus_record.py "$WORK/corpus" --only graph_break --modes time,traces --deadline-s 200 >> "$L" 2>&1
    tar -C "$WORK" -czf "$OUT/last36.tgz" corpus
    python3 benchmarks/toggle_probe.py --workload gpt2-compiled --steps 8 --rounds 3 --record ops >> "$L" 2>&1
    python3 benchmarks/corpus_record.py "$WORK/corpus" --only "${CORPUS_ONLY:-sync_tolist,sync_mask,sync_explicit,fp32_gemm,odd_gemm,hidden_copies}" --modes traces --deadline-s "${CORPUS_DEADLINE_S:-90}" >> "$L" 2>&1
    tar -C "$WORK" -czf "$OUT/last36.tgz" corpus
    ;;
  gb36)  # issue 36: the graph-break pair at 8192 rows (timed, torch.profiler traces, tenprof run) and two launch-bound pairs re-recorded; text in $OUT/gb36.txt
    G="$OUT/gb36.txt"
    python3 benchmarks/corpus_record.py "$WORK/corpus" --only graph_break --modes time,traces >> "$G" 2>&1
    cat "$WORK/corpus/timings.jsonl" >> "$G"
    record finding_graph_break_host examples/findings/graph_break_host.py > /dev/null
    record finding_graph_break_host_fixed examples/findings/graph_break_host.py --fixed > /dev/null
    for f in python_elements foreach_off; do
      record "finding_${f}" examples/findings/$f.py > /dev/null
      record "finding_${f}_fixed" examples/findings/$f.py --fixed > /dev/null
    done
    for d in "$WORK"/prof/finding_*; do tenprof report "$d" --limit 3 2>&1 | grep -E "^[0-9]+\. |   seen: |^Overhead" | sed "s|^|$(basename "$d"): |"; done >> "$G"
    tar -C "$WORK" -czf "$OUT/gb36.tgz" prof corpus
    ;;
  retime36)  # issue 36: the graph-break pair timed three times each, 40 steps, interleaved; torch.profiler traces for more pairs; text in $OUT/retime36.txt
    R="$OUT/retime36.txt"
    for r in 1 2 3; do for f in "" --fixed; do
      ( cd "$REPO/examples/findings" && TENPROF_CORPUS_TIME=1 python3 graph_break_host.py --steps 40 $f ) 2>&1 | grep corpus_step_ms | sed "s|^|graph_break repeat=$r fixed=${f:-no} |" >> "$R"
    done; done
    python3 benchmarks/corpus_record.py "$WORK/corpus" --only "${CORPUS_ONLY:-hidden_copies,few_workers,host_gaps,launch_bound,variance}" --modes traces --deadline-s "${CORPUS_DEADLINE_S:-150}" >> "$R" 2>&1
    tar -C "$WORK" -czf "$OUT/retime36.tgz" corpus
    ;;
  defer36)  # issue 36: toggle_probe with --defer-export, then same36's benchmark (run at 19:05 UTC with a capture that wrote each stopped session's part at the end of the run: measured, not kept); text in $OUT/defer36.txt
    python3 benchmarks/toggle_probe.py --workload mlp --steps 50 --rounds 3 --defer-export 2>&1 | grep -v "^\[W\|USDT" > "$OUT/defer36.txt"
    python3 benchmarks/overhead.py --workloads "${TIMED_WORKLOADS:-mlp,gpt2-compiled}" --configs plain,tenprof-timed --repeats "${TIMED_REPEATS:-3}" --deadline-min "${TIMED_DEADLINE_MIN:-6.5}" --json "$OUT/" >> "$OUT/defer36.txt" 2>&1
    ;;
  native38)  # issue 38: the native capture on the GPU: parity with the default capture (benchmarks/native_parity.py) on the MLP and fp32 GPT-2, then its cost beside torch.profiler and Proton (NATIVE_WORKLOADS, NATIVE_REPEATS, NATIVE_DEADLINE_MIN); text in $OUT/native38.txt
    N="$OUT/native38.txt"
    ( cd "$REPO" && python3 benchmarks/native_parity.py "$WORK/parity_mlp" examples/small_mlp.py --steps 30 ) >> "$N" 2>&1
    ( cd "$REPO" && python3 benchmarks/native_parity.py "$WORK/parity_gpt2" examples/gpt2_fp32.py --steps 6 --warmup 2 ) >> "$N" 2>&1
    tenprof report "$WORK/parity_mlp/native" --limit 5 > "$OUT/native38_mlp_report.txt" 2>&1
    tar -C "$WORK" -czf "$OUT/native38_parity_mlp.tgz" parity_mlp  # both profiles, to study the joins on the CPU
    python3 benchmarks/overhead.py --workloads "${NATIVE_WORKLOADS:-mlp,gpt2-fp32}" --configs plain,torch,proton,tenprof,tenprof-native --repeats "${NATIVE_REPEATS:-3}" --deadline-min "${NATIVE_DEADLINE_MIN:-6}" --json "$OUT/" >> "$N" 2>&1
    ;;
  memory39)  # issue 39: the memory cases (examples/findings keep_outputs, loss_graph, eval_outputs, growing_sizes, checkpointing, oom_first_step) recorded with their controls, first findings and memory numbers in $OUT/memory39.txt, then tests/gpu/test_gpu_memory.py
    N="$OUT/memory39.txt"
    for c in "keep_outputs --steps 25" "keep_outputs --steps 25 --fixed" "loss_graph --steps 25" "loss_graph --steps 25 --fixed" \
             "eval_outputs --steps 25" "eval_outputs --steps 25 --fixed" "growing_sizes --steps 10" "growing_sizes --steps 10 --fixed" "checkpointing --steps 10" "checkpointing --steps 10 --fixed" \
             "keep_outputs --until-oom" "oom_first_step"; do
      read -r -a A <<< "$c"; name="memory_${A[0]}$(echo "${A[*]:1}" | tr -d ' -' | sed 's/steps[0-9]*//')"
      ( cd "$REPO" && timeout 240 tenprof run --quiet -o "$WORK/prof/$name" "examples/findings/${A[0]}.py" "${A[@]:1}" ) > "$WORK/logs/$name.log" 2>&1
      echo "== $name ($c): exit $?" >> "$N"
      tail -n 3 "$WORK/logs/$name.log" >> "$N"
      tenprof report "$WORK/prof/$name" --limit 4 2>&1 | grep -E "^[0-9]+\. |   (seen|fix)|^Memory|^Steps|^Incomplete" | head -n 14 >> "$N"
    done
    ( cd "$REPO" && timeout "${MEMORY_TESTS_S:-280}" python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_memory.py ) >> "$N" 2>&1
    ;;
  workeroom39)  # issue 39: out of memory in a DataLoader worker (examples/findings/worker_oom.py: the worker's CPU allocator fails at the fifth batch) while the loop trains on the GPU, and its twin; text in $OUT/workeroom39.txt
    N="$OUT/workeroom39.txt"
    for v in "" --fixed; do
      ( cd "$REPO/examples/findings" && timeout 120 tenprof run --quiet -o "$WORK/prof/worker_oom$v" worker_oom.py --steps 8 $v ) > "$WORK/logs/worker_oom$v.log" 2>&1
      echo "== worker_oom $v: exit $?" >> "$N"
      tail -n 2 "$WORK/logs/worker_oom$v.log" | cut -c1-300 >> "$N"
      tenprof report "$WORK/prof/worker_oom$v" --limit 3 2>&1 | grep -E "^[0-9]+\. |   (seen|fix)|^Device|^Incomplete" | head -n 12 >> "$N"
    done
    ;;
  tests38)  # issue 38: the timeline's GPU tests (capture; native lines: eager, compiled, CUDA graphs, threads; prebuilt launches; the script's own profiler; op copy) with TESTS38_CAPTURE as `tenprof run`'s default (native-cupti-ops: native-cupti with TENPROF_OPS=sampled, the default; kineto: today's default capture), held to 8 cores; text in $OUT/tests38-CAPTURE.txt
    cap=${TESTS38_CAPTURE:-native-cupti-ops}
    case $cap in
      native-cupti-ops) capenv="TENPROF_OPS=sampled TENPROF_CAPTURE=native-cupti TENPROF_NATIVE_GPU=1" ;;
      kineto) capenv="TENPROF_CAPTURE=kineto" ;;
      *) echo "tests38: unknown TESTS38_CAPTURE=$cap" >&2; exit 2 ;;
    esac
    env $capenv taskset -c 0-7 timeout "${GPUTESTS_TIMEOUT:-330}" python3 -m pytest -q -s -m gpu -p no:cacheprovider \
      tests/gpu/test_gpu_capture.py tests/gpu/test_gpu_native_lines.py tests/gpu/test_gpu_prebuilt_launches.py tests/gpu/test_gpu_own_profiler.py tests/gpu/test_gpu_op_copy.py > "$OUT/tests38-$cap.txt" 2>&1
    echo "tests38 $cap exit=$?" >> "$OUT/tests38-$cap.txt"
    ;;
  flag38e)  # issue 38: `tenprof run --capture native-cupti --ops sampled` end to end as a user runs it (the flag, not TENPROF_OPS): the MLP and a compiled MLP, their reports' header and first findings; then `--ops sampled` with the Kineto capture, which must be refused in one line; text in $OUT/flag38e.txt
    N="$OUT/flag38e.txt"
    for job in "examples/small_mlp.py --steps 30" "examples/compiled_train.py --model mlp --steps 12"; do
      name=$(basename "${job%% *}" .py)
      echo "== tenprof run --capture native-cupti --ops sampled $job" >> "$N"
      ( cd "$REPO" && env -u TENPROF_OPS tenprof run --quiet --capture native-cupti --ops sampled -o "$WORK/flag38e-$name" $job ) > "$WORK/flag38e-$name.log" 2>&1
      echo "exit=$?" >> "$N"; grep -v "Warning\|warn\|detach\|^  print\|^Consider" "$WORK/flag38e-$name.log" | tail -n 4 >> "$N"
      tenprof report "$WORK/flag38e-$name" --limit 2 2>&1 | head -n 16 >> "$N"
      python3 -c "import json,sys; m=json.load(open(sys.argv[1]+'/meta.json')); t=m['timeline']; print('op_copy', t.get('op_copy')); print('input_sampling asked', (t.get('input_sampling') or {}).get('asked'))" "$WORK/flag38e-$name" >> "$N" 2>&1
    done
    echo "== --ops sampled with --capture kineto" >> "$N"
    ( cd "$REPO" && tenprof run --capture kineto --ops sampled -o "$WORK/flag38e-refused" examples/small_mlp.py --steps 3 ) >> "$N" 2>&1
    echo "exit=$?" >> "$N"
    ;;
  partsc38)  # issue 38: where compiled GPT-2's recorded step costs more than its un-profiled one under the option: the whole capture against one with every part off but CUPTI and the op copy (sampler, NVML thread, memory, lines, shapes), PARTSC38_ROUNDS interleaved rounds (default 3; in_run_overhead.py), held to 8 cores; text in $OUT/partsc38.txt
    N="$OUT/partsc38.txt"
    ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout "${PARTSC38_S:-540}" python3 in_run_overhead.py --workloads gpt2-compiled --rounds "${PARTSC38_ROUNDS:-3}" \
        --captures "${PARTSC38_CAPTURES:-native-cupti-ops,native-cupti-ops+nosampler+noclocks+nomem+nolines+noshapes}" --json "$OUT/partsc38.json" ) >> "$N" 2>&1
    ;;
  parity38c)  # issue 38: attribution parity of native-cupti with TENPROF_OPS=sampled against the default capture on the conv block (overhead.py's conv workload, 10 steps; benchmarks/native_parity.py); text in $OUT/parity38c.txt
    N="$OUT/parity38c.txt"
    ( cd "$REPO" && TENPROF_OPS=sampled PARITY_CAPTURES=default,native-cupti timeout 100 python3 benchmarks/native_parity.py "$WORK/parity_conv" examples/conv_block.py --steps 10 --warmup 3 ) 2>&1 | grep -v "Warning\|warn" >> "$N"
    python3 -c "import gzip,json,sys; d=json.loads(gzip.decompress(open(sys.argv[1],'rb').read())); print('op copy', d.get('op_copy'), 'input sampling', d.get('input_sampling'))" "$WORK/parity_conv/native-cupti/timeline/raw/callsites.json.gz" >> "$N" 2>&1
    ;;
  parity38g)  # issue 38: attribution parity of native-cupti with TENPROF_OPS=sampled against the default capture on compiled GPT-2 (bf16, default mode, 12 steps; each run compiles from an empty cache, ~1.5 min; benchmarks/native_parity.py, whose "steady" comparison leaves out the compiling steps); text in $OUT/parity38g.txt
    N="$OUT/parity38g.txt"
    ( cd "$REPO" && TENPROF_OPS=sampled PARITY_CAPTURES=default,native-cupti timeout 400 python3 benchmarks/native_parity.py "$WORK/parity_gpt2c" examples/compiled_train.py --model gpt2 --mode default --steps 12 --warmup 3 ) 2>&1 | grep -v "Warning\|warn" >> "$N"
    python3 -c "import gzip,json,sys; d=json.loads(gzip.decompress(open(sys.argv[1],'rb').read())); print('op copy', d.get('op_copy'), 'input sampling', d.get('input_sampling'))" "$WORK/parity_gpt2c/native-cupti/timeline/raw/callsites.json.gz" >> "$N" 2>&1
    ;;
  fixture38s)  # issue 38: the native-cupti MLP fixture under TENPROF_OPS=sampled ($OUT/cupti_mlp_ops.tgz: op records in the asked steps alone, the other steps' ops copied by their launches); text in $OUT/fixture38s.txt
    N="$OUT/fixture38s.txt"
    ( cd "$REPO" && TENPROF_OPS=sampled tenprof run --quiet --capture native-cupti -o "$OUT/cupti_mlp_ops" examples/small_mlp.py --steps 12 --warmup 2 ) > "$OUT/cupti_mlp_ops.log" 2>&1
    echo "fixture exit=$?" >> "$N"
    tail -n 3 "$OUT/cupti_mlp_ops.log" >> "$N"
    steps_of "$OUT/cupti_mlp_ops" >> "$N" 2>&1
    tenprof report "$OUT/cupti_mlp_ops" --limit 3 2>&1 | head -n 30 >> "$N"
    tar -C "$OUT" -czf "$OUT/cupti_mlp_ops.tgz" cupti_mlp_ops && rm -rf "$OUT/cupti_mlp_ops"  # raw/ is deeper than what comes back
    ;;
  table38)  # issue 38: the goal table's workloads (TABLE38_WORKLOADS, default gpt2-fp32,conv) beside torch.profiler and Proton, native-cupti with TENPROF_OPS=sampled, every timed step recorded (TABLE38_REPEATS, default 2; TABLE38_MIN minutes, default 5.5), held to 8 cores; text in $OUT/table38.txt
    N="$OUT/table38.txt"
    ( cd "$REPO" && taskset -c 0-7 python3 benchmarks/overhead.py --workloads "${TABLE38_WORKLOADS:-gpt2-fp32,conv}" --repeats "${TABLE38_REPEATS:-2}" \
        --configs plain,torch,proton,tenprof-cupti-ops --deadline-min "${TABLE38_MIN:-5.5}" --json "$OUT/table38.json" ) 2>&1 | grep -v "^\[" >> "$N"
    ;;
  fixture38)  # issue 38: the native-cupti MLP fixture ($OUT/cupti_mlp.tgz: inputs asked in sampled steps, the host sampler behind its gate); text in $OUT/fixture38.txt
    N="$OUT/fixture38.txt"
    ( cd "$REPO" && tenprof run --quiet --capture native-cupti -o "$OUT/cupti_mlp" examples/small_mlp.py --steps 12 --warmup 2 ) > "$OUT/cupti_mlp.log" 2>&1
    echo "fixture exit=$?" >> "$N"
    tail -n 3 "$OUT/cupti_mlp.log" >> "$N"
    steps_of "$OUT/cupti_mlp" >> "$N" 2>&1
    tenprof report "$OUT/cupti_mlp" --limit 3 2>&1 | head -n 30 >> "$N"
    tar -C "$OUT" -czf "$OUT/cupti_mlp.tgz" cupti_mlp && rm -rf "$OUT/cupti_mlp"  # raw/ is deeper than what comes back
    ;;
  opsfinal38)  # issue 38: TENPROF_OPS=sampled under the timeline's GPU tests (native-cupti as the default, as gputests_cupti), then compiled GPT-2's cost beside torch.profiler and Proton with what time is left (OPSFINAL_S, default 540 s, for the whole task), held to 8 cores; text in $OUT/opsfinal38.txt
    N="$OUT/opsfinal38.txt"
    started=$SECONDS
    TENPROF_OPS=sampled TENPROF_CAPTURE=native-cupti TENPROF_NATIVE_GPU=1 timeout "${GPUTESTS_TIMEOUT:-320}" python3 -m pytest -q -s -m gpu -p no:cacheprovider \
      tests/gpu/test_gpu_capture.py tests/gpu/test_gpu_native_lines.py tests/gpu/test_gpu_prebuilt_launches.py tests/gpu/test_gpu_own_profiler.py > "$OUT/opsfinal38-gputests.txt" 2>&1; tail -n 25 "$OUT/opsfinal38-gputests.txt" >> "$N"
    left=$(( ${OPSFINAL_S:-540} - (SECONDS - started) ))
    echo "gpu tests took $(( SECONDS - started )) s; $left s left for compiled GPT-2" >> "$N"
    ( cd "$REPO" && taskset -c 0-7 python3 benchmarks/overhead.py --workloads gpt2-compiled --repeats 2 \
        --configs plain,torch,proton,tenprof-cupti-ops --deadline-min "$(python3 -c "print(max(0.5, $left / 60 - 0.3))")" \
        --json "$OUT/opsfinal38-compiled.json" ) 2>&1 | grep -v "^\[" >> "$N"
    ;;
  cost38)  # issue 38: where TENPROF_OPS=sampled's cost is: the MLP's recorded steps against its own un-profiled ones with the parts of the capture off one by one (in_run_overhead.py's +parts), then whole loops beside torch.profiler and Proton, MLP (3 repeats) and fp32 GPT-2 (2), held to 8 cores; text in $OUT/cost38.txt
    N="$OUT/cost38.txt"
    ( cd "$REPO" && TENPROF_OPS=sampled PARITY_CAPTURES=default,native-cupti timeout 150 python3 benchmarks/native_parity.py "$WORK/cost_mlp" examples/small_mlp.py --steps 60 --warmup 5 ) 2>&1 | grep "kernel\|launches\|allocator samples:\|op copy\|^  allocator" >> "$N"
    ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout 170 python3 in_run_overhead.py --workloads mlp --rounds 2 \
        --captures "${COST38_CAPTURES:-native-cupti-ops,native-cupti-ops+nomem,native-cupti-ops+nosampler,native-cupti-ops+nolines+nomem+nosampler}" \
        --json "$OUT/cost38-inrun.json" ) >> "$N" 2>&1
    ( cd "$REPO" && taskset -c 0-7 python3 benchmarks/overhead.py --workloads mlp --repeats 3 \
        --configs plain,torch,proton,tenprof-cupti,tenprof-cupti-ops --deadline-min 3.2 --json "$OUT/cost38-mlp.json" ) 2>&1 | grep -v "^\[" >> "$N"
    ( cd "$REPO" && taskset -c 0-7 python3 benchmarks/overhead.py --workloads gpt2-fp32 --repeats 2 \
        --configs plain,torch,proton,tenprof-cupti-ops --deadline-min 3.4 --json "$OUT/cost38-gpt2.json" ) 2>&1 | grep -v "^\[" >> "$N"
    ;;
  ops38)  # issue 38: TENPROF_OPS=sampled (op records in sampled steps alone, the others' copied by their launches): parity of native-cupti with it against the default capture on the MLP and fp32 GPT-2 (what the copy gave, from the sidecar), then each capture against its own un-profiled steps (in_run_overhead.py: native-cupti with and without it), held to 8 cores; text in $OUT/ops38.txt
    N="$OUT/ops38.txt"
    for w in "mlp examples/small_mlp.py --steps 60 --warmup 5" "gpt2 examples/gpt2_fp32.py --steps 12 --warmup 3"; do
      read -r -a A <<< "$w"
      ( cd "$REPO" && TENPROF_OPS=sampled PARITY_CAPTURES=default,native-cupti timeout 240 python3 benchmarks/native_parity.py "$WORK/ops_${A[0]}" "${A[@]:1}" ) 2>&1 | grep -v "^  op\|^ *[0-9]* *[0-9]* *[0-9]* *[0-9.]* *[0-9]* *[0-9]* *[0-9.]*$\|Warning\|warn" >> "$N"
      python3 -c "import gzip,json,sys; d=json.loads(gzip.decompress(open(sys.argv[1],'rb').read())); print('op copy', d.get('op_copy'), 'input sampling', d.get('input_sampling'))" "$WORK/ops_${A[0]}/native-cupti/timeline/raw/callsites.json.gz" >> "$N" 2>&1
    done
    ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout 250 python3 in_run_overhead.py --captures native-cupti,native-cupti-ops --rounds "${ROUNDS38:-2}" --json "$OUT/ops38-inrun.json" ) >> "$N" 2>&1
    ;;
  boundary38)  # issue 38: a recorded step's boundary on the GPU machine since the native ranges and the sampler's skipped rounds (CPU: about half; benchmarks/step_boundary.py on the MLP, 3 runs), then the MLP's in-run and loop ratios with the option, held to 8 cores; text in $OUT/boundary38.txt
    N="$OUT/boundary38.txt"
    ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout 200 python3 step_boundary.py --captures native-cupti,native-cupti-ops,kineto --runs 3 ) >> "$N" 2>&1
    ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout 120 python3 in_run_overhead.py --workloads mlp --rounds 2 \
        --captures native-cupti-ops --json "$OUT/boundary38-inrun.json" ) >> "$N" 2>&1
    ( cd "$REPO" && taskset -c 0-7 python3 benchmarks/overhead.py --workloads mlp --repeats 3 \
        --configs plain,torch,proton,tenprof-cupti-ops --deadline-min 3.5 --json "$OUT/boundary38-mlp.json" ) 2>&1 | grep -v "^\[" >> "$N"
    ;;
  detach38)  # issue 36/38: where TENPROF_CUPTI_DETACH=1 slows the recorded steps (attach38: the MLP's in-run recorded steps 4.3 -> 5.3 ms with it): each step's own time, MLP 80 steps with 10 timed off, native-cupti with and without the detach, held to 8 cores; text in $OUT/detach38.txt
    N="$OUT/detach38.txt"
    for d in 0 1; do
      ( cd "$REPO" && TENPROF_CUPTI_DETACH=$d taskset -c 0-7 timeout 60 python3 -m tenprof run --quiet --capture native-cupti --overhead-steps 10 \
          -o "$WORK/detach$d" examples/small_mlp.py --steps 80 --warmup 5 ) > "$WORK/detach$d.log" 2>&1
      echo "TENPROF_CUPTI_DETACH=$d exit $?" >> "$N"; steps_of "$WORK/detach$d" | tr '\n' ';' >> "$N"; echo >> "$N"
    done
    ;;
  check38)  # issue 38: compiled GPT-2's input asks once allocator sizes that asked for nothing stop counting (input_sampling.MEMORY_FALSE_ALARMS; in_run_overhead.py, native-cupti with TENPROF_OPS=sampled, 1 round), then the timeline's GPU tests under TENPROF_OPS=sampled with native-cupti as the default (torch's profiler flag down in the ops-off steps, the tail fix), held to 8 cores; text in $OUT/check38.txt
    N="$OUT/check38.txt"
    ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout 150 python3 in_run_overhead.py --workloads gpt2-compiled --rounds 1 \
        --captures native-cupti-ops --json "$OUT/check38-inrun.json" ) >> "$N" 2>&1
    TENPROF_OPS=sampled TENPROF_CAPTURE=native-cupti TENPROF_NATIVE_GPU=1 timeout "${GPUTESTS_TIMEOUT:-330}" python3 -m pytest -q -s -m gpu -p no:cacheprovider \
      tests/gpu/test_gpu_capture.py tests/gpu/test_gpu_native_lines.py tests/gpu/test_gpu_prebuilt_launches.py tests/gpu/test_gpu_own_profiler.py tests/gpu/test_gpu_op_copy.py > "$OUT/check38-gputests.txt" 2>&1; tail -n 25 "$OUT/check38-gputests.txt" >> "$N"
    ;;
  memc38)  # issue 38: why compiled GPT-2's second recorded step after each un-profiled stretch reads other allocator sizes than its kind's settled ones (asked for inputs in 10 of 23 steps for that alone, flag38): one run under TENPROF_OPS=sampled as in_run_overhead.py's, its profile kept ($OUT/memc38-profile.tgz) for the per-step allocator reports; then where its recorded steps' cost is, parts off one by one (in_run_overhead.py, 1 round), held to 8 cores; text in $OUT/memc38.txt
    N="$OUT/memc38.txt"
    ( cd "$REPO" && TENPROF_OPS=sampled taskset -c 0-7 timeout 150 python3 -m tenprof run --quiet --capture native-cupti --overhead-steps 10 \
        -o "$WORK/memc38-profile" examples/compiled_train.py --model gpt2 --mode default --steps 40 ) > "$OUT/memc38-run.txt" 2>&1
    tail -n 3 "$OUT/memc38-run.txt" >> "$N"
    ( cd "$WORK" && tar czf "$OUT/memc38-profile.tgz" memc38-profile && ls -la "$OUT/memc38-profile.tgz" ) >> "$N" 2>&1
    ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout 330 python3 in_run_overhead.py --workloads gpt2-compiled --rounds 1 \
        --captures "${MEMC38_CAPTURES:-native-cupti-ops+nomem,native-cupti-ops+nolines+nomem+nosampler,native-cupti-ops+nosampler,native-cupti-ops}" --json "$OUT/memc38-inrun.json" ) >> "$N" 2>&1
    ;;
  flag38)  # issue 38: compiled GPT-2 with torch's profiler flag down in TENPROF_OPS=sampled's ops-off steps (so Inductor launches on its fast path there): its recorded steps against its own un-profiled ones with and without the option, and why its steps asked for inputs (in_run_overhead.py, 1 round, each run compiles for ~40 s), then its whole loop beside torch.profiler and Proton in the time left (FLAG38_S, default 560 s, for the whole task), held to 8 cores; text in $OUT/flag38.txt
    N="$OUT/flag38.txt"
    started=$SECONDS
    ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout 300 python3 in_run_overhead.py --workloads gpt2-compiled --rounds 1 \
        --captures "${FLAG38_CAPTURES:-native-cupti-ops,native-cupti-ops+nosampler,native-cupti}" --json "$OUT/flag38-inrun.json" ) >> "$N" 2>&1
    left=$(( ${FLAG38_S:-560} - (SECONDS - started) ))
    echo "in-run took $(( SECONDS - started )) s; $left s left for the loop" >> "$N"
    ( cd "$REPO" && taskset -c 0-7 python3 benchmarks/overhead.py --workloads gpt2-compiled --repeats 1 \
        --configs plain,tenprof-cupti-ops,torch,proton --deadline-min "$(python3 -c "print(max(0.5, $left / 60 - 0.3))")" \
        --json "$OUT/flag38-loop.json" ) 2>&1 | grep -v "^\[" >> "$N"
    ;;
  inrunc38)  # issue 38: where compiled GPT-2's cost under native-cupti is, with and without TENPROF_OPS=sampled and the host sampler (in_run_overhead.py, gpt2-compiled, 1 round: each run compiles for ~40 s), then fp32 GPT-2's input sampling with ints' values out of the digest, the MLP's parity line (launch digest) and its in-run parts, held to 8 cores; text in $OUT/inrunc38.txt
    N="$OUT/inrunc38.txt"
    ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout 330 python3 in_run_overhead.py --workloads gpt2-compiled --rounds 1 \
        --captures "${INRUNC38_CAPTURES:-native-cupti,native-cupti-ops,native-cupti-ops+nosampler}" --json "$OUT/inrunc38-compiled.json" ) >> "$N" 2>&1
    ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout 60 python3 in_run_overhead.py --workloads gpt2-fp32 --rounds 1 \
        --captures native-cupti-ops --json "$OUT/inrunc38-gpt2.json" ) >> "$N" 2>&1
    ( cd "$REPO" && TENPROF_OPS=sampled PARITY_CAPTURES=default,native-cupti timeout 120 python3 benchmarks/native_parity.py "$WORK/inrunc_mlp" examples/small_mlp.py --steps 60 --warmup 5 ) 2>&1 | grep "kernel\|launches\|allocator samples:\|op copy\|^  allocator" >> "$N"
    ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout 90 python3 in_run_overhead.py --workloads mlp --rounds 2 \
        --captures native-cupti-ops,native-cupti-ops+nosampler --json "$OUT/inrunc38-mlp.json" ) >> "$N" 2>&1
    ;;
  kindsc38)  # issue 38: why compiled GPT-2's input sampling asked in 10 of 23 recorded steps on an H200 (2026-11-29 08:00, ints' values already out of the digests): recorded with inputs in every step (native-cupti, TENPROF_INPUTS=every, 12 steps after compiling) and its steps set side by side (benchmarks/step_inputs_diff.py); text in $OUT/kindsc38.txt
    N="$OUT/kindsc38.txt"
    ( cd "$REPO" && TENPROF_INPUTS=every timeout 200 tenprof run --quiet --capture native-cupti --overhead-steps 0 -o "$WORK/kindsc" examples/compiled_train.py --model gpt2 --mode default --steps 12 ) >> "$N" 2>&1
    ( cd "$REPO" && python3 benchmarks/step_inputs_diff.py "$WORK/kindsc" ) 2>&1 | head -n 80 >> "$N"
    ;;
  attach38)  # issue 38/36: what tenprof's CUPTI client costs while it records nothing: attached and disabled (native-cupti's un-profiled steps today) against detached and plain, and whether it attaches again after a detach (benchmarks/cupti_attach_probe.py), MLP and compiled GPT-2, then the MLP's in-run ratio with TENPROF_CUPTI_DETACH=1 against without, held to 8 cores; text in $OUT/attach38.txt
    for w in mlp gpt2-compiled; do
      ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout 240 python3 cupti_attach_probe.py --workload $w --rounds 3 ) 2>&1 | grep -v "Warning\|warn" >> "$OUT/attach38.txt"
    done
    # the run's own un-profiled steps with CUPTI detached in them (TENPROF_CUPTI_DETACH=1) against attached
    ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout 150 python3 in_run_overhead.py --workloads mlp --rounds 2 \
        --captures native-cupti-ops,native-cupti-ops+detach --json "$OUT/attach38-inrun.json" ) >> "$OUT/attach38.txt" 2>&1
    ;;
  tail38)  # issue 38: the stretch after the last step mark under TENPROF_OPS=sampled (its kernels without an op, said so, not "(user kernel)"): tests/gpu/test_gpu_capture.py's CUDA run and test_gpu_op_copy.py with the option, and the CUDA run on the default capture; text in $OUT/tail38.txt
    N="$OUT/tail38.txt"
    TENPROF_OPS=sampled TENPROF_CAPTURE=native-cupti TENPROF_NATIVE_GPU=1 timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/gpu/test_gpu_capture.py::test_run_on_cuda_matches_torch_profiler_and_attributes_every_kernel tests/gpu/test_gpu_op_copy.py > "$OUT/tail38-sampled.txt" 2>&1; tail -n 4 "$OUT/tail38-sampled.txt" >> "$N"
    timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gpu_capture.py::test_run_on_cuda_matches_torch_profiler_and_attributes_every_kernel > "$OUT/tail38-default.txt" 2>&1; tail -n 4 "$OUT/tail38-default.txt" >> "$N"
    ( cd "$REPO" && TENPROF_OPS=sampled tenprof run --quiet --capture native-cupti -o "$WORK/tail_mm" examples/matmul_add.py --size 2048 --steps 5 && tenprof report "$WORK/tail_mm" --limit 2 | grep -i "attribution\|ops " ) >> "$N" 2>&1
    ;;
  opstest38)  # issue 38: tests/gpu/test_gpu_op_copy.py (TENPROF_OPS=sampled against every step's ops on the MLP: kernels and allocator samples alike, the launch digest steady); text in $OUT/opstest38.txt
    timeout 300 python3 -m pytest -q -s -m gpu -p no:cacheprovider tests/gpu/test_gpu_op_copy.py > "$OUT/opstest38.txt" 2>&1; tail -n 15 "$OUT/opstest38.txt"
    ;;
  kinds38)  # issue 38: why fp32 GPT-2's input sampling asked in every recorded step on an H200 (2026-11-29): recorded with inputs in every step (native-cupti, TENPROF_INPUTS=every, 8 steps) and its steps set side by side (benchmarks/step_inputs_diff.py); text in $OUT/kinds38.txt
    N="$OUT/kinds38.txt"
    ( cd "$REPO" && TENPROF_INPUTS=every tenprof run --quiet --capture native-cupti --overhead-steps 0 -o "$WORK/kinds_gpt2" examples/gpt2_fp32.py --steps 8 --warmup 1 ) >> "$N" 2>&1
    ( cd "$REPO" && python3 benchmarks/step_inputs_diff.py "$WORK/kinds_gpt2" ) >> "$N" 2>&1
    ( cd "$REPO" && tenprof run --quiet --capture native-cupti --overhead-steps 0 -o "$WORK/kinds_gpt2_sampled" examples/gpt2_fp32.py --steps 8 --warmup 1 ) >> "$N" 2>&1
    python3 -c "import gzip,json,sys; print('input sampling', json.loads(gzip.decompress(open(sys.argv[1],'rb').read())).get('input_sampling'))" "$WORK/kinds_gpt2_sampled/timeline/raw/callsites.json.gz" >> "$N" 2>&1
    ;;
  stepsops38)  # issue 38: compiled GPT-2 (overhead.py's workload) step by step, plain and under native-cupti with TENPROF_OPS=sampled (benchmarks/step_by_step.py, STEPS38_ROUNDS rounds, default 2), held to 8 cores: where the option's cost on compiled code is (one loop read 2.21x on 2026-11-29); text in $OUT/stepsops38.txt
    ( cd "$REPO" && TENPROF_OPS=sampled taskset -c 0-7 python3 benchmarks/step_by_step.py --rounds "${STEPS38_ROUNDS:-2}" --json "$OUT/stepsops38.json" \
        examples/compiled_train.py --model gpt2 --mode default --steps 37 --warmup 3 ) 2>&1 | grep -v "^loop_s\|Warning\|warn" >> "$OUT/stepsops38.txt"
    ;;
  steps38)  # issue 38: fp32 GPT-2 (overhead.py's 10 steps after 3 of warm-up) and the MLP step by step, plain and under native-cupti (benchmarks/step_by_step.py, STEPS38_ROUNDS rounds), held to 8 cores: which steps hold the loop's cost; text in $OUT/steps38.txt
    ( cd "$REPO" && taskset -c 0-7 python3 benchmarks/step_by_step.py --rounds "${STEPS38_ROUNDS:-3}" --json "$OUT/steps38-gpt2.json" examples/gpt2_fp32.py --steps 10 --warmup 3 ) 2>&1 | grep -v "^loop_s\|Warning\|warn" >> "$OUT/steps38.txt"
    ( cd "$REPO" && taskset -c 0-7 python3 benchmarks/step_by_step.py --rounds "${STEPS38_ROUNDS:-3}" --json "$OUT/steps38-mlp.json" examples/small_mlp.py --steps 60 --warmup 10 ) 2>&1 | grep -v "^loop_s\|Warning\|warn" >> "$OUT/steps38.txt"
    ;;
  inrun38)  # issue 38: each capture's recorded steps against its own un-profiled ones in the same process (benchmarks/in_run_overhead.py: --overhead-steps, interleaved, no process-to-process noise), MLP and fp32 GPT-2, ROUNDS38 rounds, held to 8 cores; text in $OUT/inrun38.txt (the 2026-11-29 03:38 UTC numbers came from this task's first form, an inline loop computing the same ratio, captures outer and workloads inner)
    ( cd "$REPO/benchmarks" && taskset -c 0-7 timeout 450 python3 in_run_overhead.py --rounds "${ROUNDS38:-2}" --json "$OUT/inrun38.json" ) > "$OUT/inrun38.txt" 2>&1
    ;;
  gate38)  # issue 38: the native captures' defaults (host sampler behind its gate, inputs in sampled steps): cost beside torch.profiler, its CUDA alone and Proton, and with the gate off or inputs every step (G38_WORKLOADS, G38_REPEATS, G38_DEADLINE_MIN per workload), held to 8 cores; text in $OUT/gate38.txt
    for w in ${G38_WORKLOADS:-mlp gpt2-fp32}; do
      ( cd "$REPO" && taskset -c 0-7 python3 benchmarks/overhead.py --workloads "$w" --repeats "${G38_REPEATS:-3}" \
          --configs "${G38_CONFIGS:-plain,torch,torch-cuda,proton,tenprof-cupti,tenprof-cupti-ungated,tenprof-cupti-every}" --deadline-min "${G38_DEADLINE_MIN:-4.5}" \
          --json "$OUT/gate38-$w.json" ) 2>&1 | grep -v "^\[" >> "$OUT/gate38.txt"
    done
    ;;
  sample38)  # issue 38: every op's inputs asked in sampled steps alone (capture/input_sampling.py): parity of native-cupti against the default capture on the MLP (and the sampling's own summary), then the cost beside torch.profiler, Proton and inputs in every step (S38_WORKLOADS, S38_REPEATS, S38_DEADLINE_MIN), held to 8 cores; text in $OUT/sample38.txt
    N="$OUT/sample38.txt"
    ( cd "$REPO" && PARITY_CAPTURES=default,native-cupti python3 benchmarks/native_parity.py "$WORK/parity_sampled" examples/small_mlp.py --steps 30 ) 2>&1 | grep -v "^  op\|^ *[0-9]* *[0-9]* *[0-9]* *[0-9.]* *[0-9]* *[0-9]* *[0-9.]*$" >> "$N"
    python3 -c "import gzip,json,sys; print('input sampling', json.loads(gzip.decompress(open(sys.argv[1],'rb').read())).get('input_sampling'))" "$WORK/parity_sampled/native-cupti/timeline/raw/callsites.json.gz" >> "$N" 2>&1
    for w in ${S38_WORKLOADS:-mlp gpt2-fp32}; do
      ( cd "$REPO" && taskset -c 0-7 python3 benchmarks/overhead.py --workloads "$w" --repeats "${S38_REPEATS:-3}" \
          --configs plain,torch,torch-cuda,proton,tenprof-cupti,tenprof-cupti-every --deadline-min "${S38_DEADLINE_MIN:-4}" \
          --json "$OUT/sample38-$w.json" ) 2>&1 | grep -v "^\[" >> "$N"
    done
    ;;
  cupti38a)  # issue 38: tenprof's own CUPTI client (--capture native-cupti): built, a run of the MLP and its report, parity against the default capture on the MLP and fp32 GPT-2, and a script's own torch.profiler after it; text in $OUT/cupti38a.txt
    N="$OUT/cupti38a.txt"
    ( cd "$REPO" && python3 -c "from tenprof.capture.cupti_client import CuptiClient as C, find_headers as h, newest_records as n; print(h(), n(h())); c = C.load(); print('libcupti API version', c.version)" ) >> "$N" 2>&1
    ( cd "$REPO" && tenprof run --quiet --capture native-cupti --overhead-steps 0 -o "$WORK/cupti_mlp" examples/small_mlp.py --steps 30 ) >> "$N" 2>&1
    echo "exit=$?" >> "$N"
    tenprof report "$WORK/cupti_mlp" --limit 4 2>&1 | head -n 45 >> "$N"
    ( cd "$REPO" && PARITY_CAPTURES=default,native-cupti python3 benchmarks/native_parity.py "$WORK/parity_mlp" examples/small_mlp.py --steps 30 ) >> "$N" 2>&1
    ( cd "$REPO" && PARITY_CAPTURES=default,native-cupti python3 benchmarks/native_parity.py "$WORK/parity_gpt2" examples/gpt2_fp32.py --steps 6 --warmup 2 ) >> "$N" 2>&1
    tar -C "$WORK" -czf "$OUT/cupti38a_parity_mlp.tgz" parity_mlp
    ( cd "$REPO" && TENPROF_CAPTURE=native-cupti timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_own_profiler.py ) >> "$N" 2>&1
    ;;
  cupti38b)  # issue 38: tenprof's own CUPTI client's cost in interleaved repeats beside torch.profiler, Proton and the native capture (C38_WORKLOADS, C38_REPEATS, C38_DEADLINE_MIN), every step recorded, the whole benchmark held to 8 cores; text in $OUT/cupti38b.txt
    ( cd "$REPO" && taskset -c 0-7 python3 benchmarks/overhead.py --workloads "${C38_WORKLOADS:-mlp,gpt2-fp32}" --repeats "${C38_REPEATS:-3}" \
        --configs "${C38_CONFIGS:-plain,torch,torch-cuda,proton,tenprof-native,tenprof-cupti}" --deadline-min "${C38_DEADLINE_MIN:-7}" \
        --json "$OUT/cupti38b.json" ) > "$OUT/cupti38b.txt" 2>&1
    ;;
  cupti38d)  # issue 38: the client's CUDA calls by CUPTI's callback API (TENPROF_CUPTI_API=callbacks): parity against the default capture on the MLP, then the cost of each way of recording the calls in interleaved repeats (C38_REPEATS, C38_DEADLINE_MIN), held to 8 cores; text in $OUT/cupti38d.txt
    N="$OUT/cupti38d.txt"
    ( cd "$REPO" && TENPROF_CUPTI_API=callbacks PARITY_CAPTURES=default,native-cupti python3 benchmarks/native_parity.py "$WORK/parity_cb" examples/small_mlp.py --steps 30 ) 2>&1 | grep -v "^  op\|^ *[0-9]* *[0-9]* *[0-9]* *[0-9.]* *[0-9]* *[0-9]* *[0-9.]*$" >> "$N"
    tenprof report "$WORK/parity_cb/native-cupti" --limit 2 2>&1 | grep -A12 "^Where each step" >> "$N"
    ( cd "$REPO" && taskset -c 0-7 python3 benchmarks/overhead.py --workloads mlp --repeats "${C38_REPEATS:-3}" \
        --configs plain,torch-cuda,proton,tenprof-native,tenprof-cupti,tenprof-cupti-cb,tenprof-cupti-none --deadline-min "${C38_DEADLINE_MIN:-6}" \
        --json "$OUT/cupti38d.json" ) 2>&1 | grep -v "^\[" >> "$N"
    ;;
  cupti38c)  # issue 38: tenprof's own CUPTI client on compiled GPT-2: parity against the native capture (Kineto's CUDA-only session); text in $OUT/cupti38c.txt
    ( cd "$REPO" && PARITY_CAPTURES=native,native-cupti timeout "${C38C_TIMEOUT:-400}" python3 benchmarks/native_parity.py "$WORK/parity_compiled" examples/compiled_train.py --model gpt2 --steps 8 --warmup 2 ) >> "$OUT/cupti38c.txt" 2>&1
    ;;
  timedin36)  # issue 36 section 3: the run's un-profiled steps against plain steps of the same process (benchmarks/timed_steps_inproc.py; TIMEDIN_WORKLOADS, TIMEDIN_ROUNDS); text in $OUT/timedin36.txt
    for w in ${TIMEDIN_WORKLOADS:-gpt2-compiled mlp}; do
      ( cd "$REPO/benchmarks" && timeout 400 python3 timed_steps_inproc.py --workload "$w" --rounds "${TIMEDIN_ROUNDS:-2}" --timed 8 --plain 20 --out "$WORK/timedin" --json "$OUT/timedin36-$w.json" ) >> "$OUT/timedin36.txt" 2>&1
    done
    ;;
  native38o)  # issue 38: the CUPTI API filter in interleaved repeats beside torch.profiler (CPU+CUDA and CUDA alone), Proton, the native capture without the filter and the default capture, on the MLP (every step recorded), the whole benchmark held to 8 cores; text in $OUT/native38o.txt
    ( cd "$REPO" && taskset -c 0-7 python3 benchmarks/overhead.py --workloads "${O38_WORKLOADS:-mlp}" --repeats "${O38_REPEATS:-3}" \
        --configs plain,torch,torch-cuda,proton,tenprof-native,tenprof-native-filtered,tenprof --deadline-min "${O38_DEADLINE_MIN:-8}" \
        --json "$OUT/native38o.json" ) > "$OUT/native38o.txt" 2>&1
    ;;
  native38n)  # issue 38: the CUPTI API filter (TENPROF_CUPTI_API_FILTER=1) on the MLP, one whole run each held to 8 cores: plain, native with the filter, native without; kernels and API calls of both profiles; text in $OUT/native38n.txt
    N="$OUT/native38n.txt"
    M="examples/small_mlp.py --steps 200 --warmup 10"
    ( cd "$REPO" && taskset -c 0-7 python3 $M ) 2>&1 | grep loop_s | sed 's/^/plain /' >> "$N"
    ( cd "$REPO" && TENPROF_CUPTI_API_FILTER=1 taskset -c 0-7 tenprof run --quiet --capture native --overhead-steps 0 -o "$WORK/filtered" $M ) 2>&1 | grep "loop_s\|rror" | sed 's/^/filtered /' >> "$N"
    ( cd "$REPO" && taskset -c 0-7 tenprof run --quiet --capture native --overhead-steps 0 -o "$WORK/native" $M ) 2>&1 | grep "loop_s\|rror" | sed 's/^/native /' >> "$N"
    python3 -c "
import collections, gzip, json, sys
from tenprof.store.profile import load_profile
for name in ('filtered', 'native'):
    p = load_profile(sys.argv[1] + '/' + name)
    k, a = p.table('kernels'), p.table('api_calls')
    attributed = sum(1 for x in k.column('op_id').to_pylist() if x is not None and x >= 0) if 'op_id' in k.column_names else -1
    print(name, 'kernels', k.num_rows, 'attributed', attributed, 'api_calls', a.num_rows)
    side = json.loads(gzip.open(sys.argv[1] + '/' + name + '/timeline/raw/callsites.json.gz').read())
    print('  filter', side.get('cupti_api_filter'))
" "$WORK" >> "$N" 2>&1
    ;;
  native38m)  # issue 38: the MLP's plain loop and one capture per process (capture_components.py --rounds 1: plain runs first, before anything attaches to CUDA), 200 steps, three processes per capture held to 8 cores; text in $OUT/native38m.txt
    for r in 1 2 3; do
      for ph in cupti session-native native-shapes session; do
        ( cd "$REPO" && taskset -c 0-7 timeout 120 python3 benchmarks/capture_components.py --workload mlp --steps 200 --rounds 1 --phases "$ph" ) 2>&1 | grep "ms/step" >> "$OUT/native38m.txt"
      done
    done
    ;;
  native38l)  # issue 38: whole runs of the MLP, each its own process held to 8 cores: the native capture with its parts taken off (threads; lines, shapes and memory) beside CUPTI's GPU activity alone; text in $OUT/native38l.txt
    taskset -c 0-7 python3 benchmarks/overhead.py --workloads mlp --configs plain,torch-cuda,tenprof-native,tenprof-native-bare,tenprof-native-light --repeats "${MLP_REPEATS:-3}" --deadline-min "${MLP_DEADLINE_MIN:-4}" --json "$OUT/" 2>&1 | grep -v "^\[" >> "$OUT/native38l.txt"
    ;;
  native38k)  # issue 38: whole runs, each its own process held to 8 cores: what CUPTI's GPU activity alone costs (torch.profiler CUDA-only) beside the native capture, torch.profiler and Proton, on the MLP and fp32 GPT-2; text in $OUT/native38k.txt
    N="$OUT/native38k.txt"
    taskset -c 0-7 python3 benchmarks/overhead.py --workloads mlp --configs plain,torch-cuda,proton,tenprof-native,torch --repeats "${MLP_REPEATS:-3}" --deadline-min "${MLP_DEADLINE_MIN:-3.3}" --json "$OUT/" 2>&1 | grep -v "^\[" >> "$N"
    taskset -c 0-7 python3 benchmarks/overhead.py --workloads gpt2-fp32 --configs plain,torch-cuda,tenprof-native,proton --repeats "${GPT2_REPEATS:-2}" --deadline-min "${GPT2_DEADLINE_MIN:-3.6}" --json "$OUT/" 2>&1 | grep -v "^\[" >> "$N"
    ;;
  native38j)  # issue 38: the whole capture in one process (benchmarks/capture_components.py session phases: TimelineSession as a run starts it, default and native) beside its parts, torch.profiler and CUPTI alone, on the MLP, fp32 GPT-2 and the conv block; text in $OUT/native38j.txt
    N="$OUT/native38j.txt"
    components() {  # workload, steps, rounds, phases
      ( cd "$REPO" && timeout "${COMPONENTS_S:-260}" python3 benchmarks/capture_components.py --workload "$1" --steps "$2" --rounds "$3" --phases "$4" ) 2>&1 | grep -v "USDT\|^STAGE\|_warn_once\|UserWarning\|warnings.warn\|^\[W" >> "$N"
    }
    components mlp 20 "${MLP_ROUNDS:-9}" plain,cupti,kineto-shapes,native-shapes,cupti-native-shapes,session,session-native,session-native-nothreads,session-native-noshapes
    COMPONENTS_S=130 components gpt2-fp32 5 "${GPT2_ROUNDS:-4}" plain,cupti,session,session-native
    COMPONENTS_S=90 components conv 10 "${CONV_ROUNDS:-5}" plain,cupti,session,session-native
    ;;
  native38i)  # issue 38: the CPU's layout beside the GPU, compiled GPT-2's parity (each run compiling from empty caches), then the MLP's whole runs beside torch.profiler and Proton with every process held to the GPU's NUMA node's first 8 cores (PIN_CPUS); text in $OUT/native38i.txt
    N="$OUT/native38i.txt"
    { lscpu | grep -E "^(Model name|Socket|NUMA|CPU\(s\)|Thread|Core)"; nvidia-smi topo -m; } > "$OUT/topology.txt" 2>&1
    ( cd "$REPO" && timeout "${COMPILED_PARITY_S:-320}" python3 -u benchmarks/native_parity.py "$WORK/parity_compiled" examples/compiled_train.py --model gpt2 --mode default --steps 5 --warmup 1 ) 2>&1 | grep -v "^loop_s\|loss_type\|UserWarning\|Consider using\|print(f" > "$N"
    PIN=${PIN_CPUS:-$(nvidia-smi topo -m 2>/dev/null | awk '$1=="GPU0" {for (i=2;i<=NF;i++) if ($i ~ /^[0-9]+-[0-9]+/) {split($i, r, "[-,]"); print r[1] "-" r[1]+7; exit}}')}
    echo "== whole runs, pinned to cores ${PIN:-none}" >> "$N"
    ${PIN:+taskset -c "$PIN"} python3 benchmarks/overhead.py --workloads mlp --configs plain,torch,proton,tenprof-native,tenprof-native-bare --repeats "${NATIVE_REPEATS:-3}" --deadline-min "${NATIVE_DEADLINE_MIN:-3.6}" --json "$OUT/" 2>&1 | grep -v "^\[" >> "$N"
    ;;
  native38h)  # issue 38: compiled GPT-2's parity alone (each run compiling from empty caches), printed as it goes; text in $OUT/native38h.txt
    ( cd "$REPO" && timeout "${COMPILED_PARITY_S:-330}" python3 -u benchmarks/native_parity.py "$WORK/parity_compiled" examples/compiled_train.py --model gpt2 --mode default --steps 5 --warmup 1 ) 2>&1 | grep -v "^loop_s\|loss_type\|UserWarning\|Consider using\|print(f" > "$OUT/native38h.txt"
    ;;
  native38g)  # issue 38: the native capture's parity on the MLP again (step times; Kineto's init line), on compiled GPT-2 (each run compiling from empty caches; steady steps apart), and the host sampler's cost with and without its gate on the MLP (one process); text in $OUT/native38g.txt
    N="$OUT/native38g.txt"
    ( cd "$REPO" && timeout 120 python3 benchmarks/native_parity.py "$WORK/parity_mlp" examples/small_mlp.py --steps 10 ) > "$OUT/parity_mlp.log" 2>&1
    echo "== parity mlp (lines saying External init: $(grep -c 'External init' "$OUT/parity_mlp.log"))" >> "$N"
    grep -v "^loop_s\|External init" "$OUT/parity_mlp.log" >> "$N"
    echo "== parity compiled gpt2" >> "$N"
    ( cd "$REPO" && timeout "${COMPILED_PARITY_S:-300}" python3 benchmarks/native_parity.py "$WORK/parity_compiled" examples/compiled_train.py --model gpt2 --mode default --steps 6 --warmup 2 ) > "$OUT/parity_compiled.log" 2>&1
    grep -v "^loop_s\|loss_type\|UserWarning\|Consider using\|print(f" "$OUT/parity_compiled.log" >> "$N"
    ( cd "$REPO" && timeout 120 python3 benchmarks/capture_components.py --workload mlp --steps 20 --rounds 7 --phases plain,native,native-sampler,native-gated ) 2>&1 | grep -v "USDT\|^STAGE\|_warn_once\|UserWarning" >> "$N"
    ;;
  native38f)  # issue 38: the native capture after its step-range and memory fixes: the native MLP fixture ($OUT/native_mlp.tgz), the GPU tests of the timeline capture under it (a limit per test), parity on the MLP (memory too); text in $OUT/native38f.txt
    N="$OUT/native38f.txt"
    ( cd "$REPO" && TENPROF_NATIVE_GPU=1 tenprof run --quiet --capture native -o "$OUT/native_mlp" examples/small_mlp.py --steps 5 --warmup 2 ) > "$OUT/native_mlp.log" 2>&1
    echo "fixture exit=$?" >> "$N"
    steps_of "$OUT/native_mlp" >> "$N" 2>&1
    tar -C "$OUT" -czf "$OUT/native_mlp.tgz" native_mlp && rm -rf "$OUT/native_mlp"  # raw/ is deeper than what comes back
    ( cd "$REPO" && TENPROF_CAPTURE=native TENPROF_NATIVE_GPU=1 timeout "${NATIVE_TESTS_S:-300}" python3 -m pytest -v -rA --timeout 150 --durations=0 -m gpu -p no:cacheprovider tests/gpu/test_gpu_capture.py tests/gpu/test_gpu_native_lines.py tests/gpu/test_gpu_prebuilt_launches.py tests/gpu/test_user_metrics_gpu.py tests/gpu/test_gpu_diff.py ) > "$OUT/gputests_native.txt" 2>&1
    grep -E "PASSED|FAILED|ERROR|passed|failed|Timeout|s call" "$OUT/gputests_native.txt" | tail -n 30 >> "$N"
    T=$(ls -d /tmp/pytest-of-*/pytest-current 2>/dev/null | head -n 1)
    [ -n "$T" ] && tar -C "$T/" -czf "$OUT/gputests_native_profiles.tgz" --exclude='*.so' --exclude='*.ncu-rep' .
    echo "== parity mlp" >> "$N"
    ( cd "$REPO" && timeout 150 python3 benchmarks/native_parity.py "$WORK/parity_mlp" examples/small_mlp.py --steps 30 ) 2>&1 | grep -v "^loop_s" >> "$N"
    ;;
  native38e)  # issue 38: the host sampler behind its gate, what it saves: components on the MLP (native + sampler, native + gated sampler) and whole runs beside torch.profiler and Proton (NATIVE_WORKLOADS, NATIVE_REPEATS, NATIVE_DEADLINE_MIN); text in $OUT/native38e.txt
    N="$OUT/native38e.txt"
    ( cd "$REPO" && timeout 120 python3 benchmarks/capture_components.py --workload mlp --steps 20 --rounds 9 --phases plain,native,native-sampler,native-gated ) 2>&1 | grep -v "USDT\|^STAGE\|_warn_once\|UserWarning" >> "$N"
    python3 benchmarks/overhead.py --workloads "${NATIVE_WORKLOADS:-mlp,gpt2-fp32}" --configs plain,torch,proton,tenprof,tenprof-gated,tenprof-native-gated --repeats "${NATIVE_REPEATS:-3}" --deadline-min "${NATIVE_DEADLINE_MIN:-6.5}" --json "$OUT/" 2>&1 | grep -v "^\[" >> "$N"
    ;;
  native38d)  # issue 38: the GPU tests of the timeline capture with the native capture as the default, compiled GPT-2's parity, and a native-captured MLP fixture ($OUT/native_mlp.tgz); text in $OUT/native38d.txt
    N="$OUT/native38d.txt"
    ( cd "$REPO" && TENPROF_NATIVE_GPU=1 tenprof run --quiet --capture native -o "$OUT/native_mlp" examples/small_mlp.py --steps 5 --warmup 2 ) > "$OUT/native_mlp.log" 2>&1
    echo "fixture exit=$?" >> "$N"
    tar -C "$OUT" -czf "$OUT/native_mlp.tgz" native_mlp && rm -rf "$OUT/native_mlp"  # raw/ is deeper than what comes back
    ( cd "$REPO" && TENPROF_CAPTURE=native TENPROF_NATIVE_GPU=1 timeout 250 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gpu_capture.py tests/gpu/test_gpu_native_lines.py tests/gpu/test_gpu_prebuilt_launches.py tests/gpu/test_user_metrics_gpu.py tests/gpu/test_gpu_diff.py ) > "$OUT/gputests_native.txt" 2>&1
    tail -n 30 "$OUT/gputests_native.txt" >> "$N"
    # the failing tests' profiles, to read on the CPU (pytest keeps the last runs' tmp_path folders)
    T=$(ls -d /tmp/pytest-of-*/pytest-current 2>/dev/null | head -n 1)
    [ -n "$T" ] && tar -C "$T/" -czf "$OUT/gputests_native_profiles.tgz" --exclude='*.so' $(cd "$T/" && ls -d test_launch_metadata* test_fp32_to_tf32* test_run_on_cuda* 2>/dev/null)
    echo "== parity compiled" >> "$N"
    ( cd "$REPO" && timeout 240 python3 benchmarks/native_parity.py "$WORK/parity_compiled" examples/compiled_train.py --model gpt2 --mode default --steps 8 --warmup 3 ) > "$OUT/parity_compiled.log" 2>&1
    grep "^default\|^native\|kernel\|ops with\|Error" "$OUT/parity_compiled.log" >> "$N"
    ;;
  native38c)  # issue 38: the native capture's parity on the MLP, fp32 GPT-2 and the conv block, the cost of its parts and of tenprof's two threads (one process), and its cost beside torch.profiler and Proton on the MLP; text in $OUT/native38c.txt
    N="$OUT/native38c.txt"
    parity() {  # name, then the example and its arguments
      local name=$1; shift
      echo "== parity $name: $*" >> "$N"
      ( cd "$REPO" && timeout 150 python3 benchmarks/native_parity.py "$WORK/parity_$name" "$@" ) 2>&1 | grep -v "^loop_s\|loss_type" >> "$N"
    }
    parity mlp examples/small_mlp.py --steps 30
    parity gpt2 examples/gpt2_fp32.py --steps 6 --warmup 2
    parity conv examples/conv_block.py --steps 10 --warmup 3
    tar -C "$WORK" -czf "$OUT/native38c_parity_mlp.tgz" parity_mlp
    ( cd "$REPO" && timeout 120 python3 benchmarks/capture_components.py --workload mlp --steps 20 --rounds 7 --phases plain,cupti,kineto,kineto-shapes,native,native-ops,native-shapes,cupti-native-shapes,sampler,clocks ) 2>&1 | grep -v "USDT\|^STAGE\|_warn_once\|UserWarning" >> "$N"
    python3 benchmarks/overhead.py --workloads "${NATIVE_WORKLOADS:-mlp}" --configs plain,torch,proton,tenprof-native,tenprof-native-bare --repeats "${NATIVE_REPEATS:-2}" --deadline-min "${NATIVE_DEADLINE_MIN:-2.5}" --json "$OUT/" 2>&1 | grep -v "^\[" >> "$N"
    ;;
  native38b)  # issue 38: the native capture's parity on the MLP again, what each of its parts costs (benchmarks/capture_components.py, one process), and its cost with and without tenprof's threads (NATIVE_WORKLOADS, NATIVE_REPEATS, NATIVE_DEADLINE_MIN); text in $OUT/native38b.txt
    N="$OUT/native38b.txt"
    ( cd "$REPO" && python3 benchmarks/native_parity.py "$WORK/parity_mlp" examples/small_mlp.py --steps 30 ) >> "$N" 2>&1
    tenprof report "$WORK/parity_mlp/native" --limit 3 > "$OUT/native38b_mlp_report.txt" 2>&1
    tar -C "$WORK" -czf "$OUT/native38b_parity_mlp.tgz" parity_mlp
    for w in mlp gpt2-fp32; do
      ( cd "$REPO" && python3 benchmarks/capture_components.py --workload $w --steps 20 --rounds "${COMPONENT_ROUNDS:-5}" --phases plain,cupti,kineto,kineto-nocorr,kineto-shapes,native,native-ops,native-shapes,cupti-native-ops,cupti-native-shapes ) 2>&1 | grep -v "USDT\|^STAGE" >> "$N"
    done
    python3 benchmarks/overhead.py --workloads "${NATIVE_WORKLOADS:-mlp,gpt2-fp32}" --configs plain,torch,tenprof-native,tenprof-native-bare --repeats "${NATIVE_REPEATS:-2}" --deadline-min "${NATIVE_DEADLINE_MIN:-3}" --json "$OUT/" >> "$N" 2>&1
    ;;
  parts38)  # issue 38: what each part of tenprof's capture costs, every step recorded, beside torch.profiler and Proton (PARTS_WORKLOADS, PARTS_REPEATS, PARTS_DEADLINE_MIN); text in $OUT/parts38.txt
    python3 benchmarks/overhead.py --workloads "${PARTS_WORKLOADS:-gpt2-fp32}" --configs plain,torch,proton,tenprof,tenprof-nosampler,tenprof-noclocks,tenprof-nothreads,tenprof-bare --repeats "${PARTS_REPEATS:-3}" --deadline-min "${PARTS_DEADLINE_MIN:-8.5}" --json "$OUT/" > "$OUT/parts38.txt" 2>&1
    ;;
  exit36)  # issue 36: which GPU test file leaves its pytest process unable to exit, and where it stands: each file alone; 25 s after "passed" a process still there has its threads' names, kernel wait channels and (cuda-gdb) stacks written; text in $OUT/exit36.txt
    X="$OUT/exit36.txt"
    for f in ${EXIT_FILES:-tests/gpu/test_gpu_capture.py tests/gpu/test_gpu_diff.py tests/gpu/test_user_metrics_gpu.py tests/gpu/test_gpu_memory.py}; do
      log="$WORK/logs/$(basename "$f").log"
      python3 -m pytest -q -m gpu -p no:cacheprovider -rf "$f" > "$log" 2>&1 &
      pid=$!
      for _ in $(seq 1 200); do grep -qE "passed|failed|error" "$log" && break; kill -0 $pid 2>/dev/null || break; sleep 1; done
      sleep 25
      echo "== $f: $(grep -E 'passed|failed' "$log" | tail -n 1)" >> "$X"
      if kill -0 $pid 2>/dev/null; then
        echo "still running 25 s after its last line; threads:" >> "$X"
        for t in /proc/$pid/task/*; do echo "  $(basename "$t") $(cat "$t/comm") wchan=$(cat "$t/wchan" 2>/dev/null) $(head -c 300 "$t/stack" 2>/dev/null | tr '\n' ' ')"; done >> "$X"
        timeout 90 /usr/local/cuda/bin/cuda-gdb -p $pid -batch -ex "info threads" -ex "thread apply all bt 25" >> "$X" 2>&1
        kill -9 $pid
      else
        wait $pid; echo "exited rc=$?" >> "$X"
      fi
    done
    cat "$X" | cut -c1-400 | tail -n 150
    ;;
  plan36)  # issue 36: the default plan of three settling steps and three timed (steps 6-11 un-profiled, 9-11 timed) end to end: a 40-step MLP's steps and its report's overhead line, then the GPU tests whose runs take the default plan (capture, diff, user metrics, memory); text in $OUT/plan36.txt
    P="$OUT/plan36.txt"
    ( cd "$REPO" && tenprof run --quiet -o "$WORK/prof/mlp40" examples/small_mlp.py --steps 40 --warmup 0 ) >> "$P" 2>&1
    steps_of "$WORK/prof/mlp40" | awk 'NR == 1 || $2 == 0' >> "$P"
    tenprof report "$WORK/prof/mlp40" 2>&1 | grep -E -A2 "Overhead|From [0-9]+ steps" >> "$P"
    timeout "${GPUTESTS_TIMEOUT:-400}" python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/gpu/test_gpu_capture.py tests/gpu/test_gpu_diff.py \
      tests/gpu/test_user_metrics_gpu.py tests/gpu/test_gpu_memory.py >> "$P" 2>&1
    echo "pytest rc=$?" >> "$P"
    tail -n 30 "$P"
    ;;
  settle36gpu)  # issue 36: the run's un-profiled steps with one settling step and one timed (tenprof-timed-s1t1, the plan until 2026-12-01) and with three settling and three timed in a row (tenprof-timed, the default since; its results before name it tenprof-timed-s3t3), plain and both interleaved in one benchmark, pinned (PIN_CPUS); TIMED_WORKLOADS (default gpt2-compiled), TIMED_REPEATS (4), TIMED_DEADLINE_MIN (7); then benchmarks/stop_recovery.py (settle 1 and 4, CUPTI torn down at each stop as tenprof does, and kept; RECOVERY=0 leaves it out); text in $OUT/settle36gpu.txt
    G="$OUT/settle36gpu.txt"
    ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 benchmarks/overhead.py --workloads "${TIMED_WORKLOADS:-gpt2-compiled}" --configs plain,tenprof-timed-s1t1,tenprof-timed --repeats "${TIMED_REPEATS:-4}" --deadline-min "${TIMED_DEADLINE_MIN:-7}" --json "$OUT/settle36gpu.json" ) >> "$G" 2>&1
    python3 benchmarks/timed_ratio.py "$OUT/settle36gpu.json" >> "$G" 2>&1
    [ "${RECOVERY:-1}" = 0 ] || for a in "--settle 1" "--settle 4" "--settle 4 --keep-cupti" "--settle 1 --eager" "--settle 1 --no-profiler --sleep-s 0.2"; do ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 benchmarks/stop_recovery.py $a ) 2>&1 | tail -n 1 >> "$G"; done
    grep -E "^\| |x$" "$G"
    ;;
  under36)  # issue 36: is a model compiled while tenprof records slower afterwards than one compiled un-profiled? one process, both timed alternately (benchmarks/compiled_under_capture.py), twice; text in $OUT/under36.txt
    for r in 1 2; do ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 benchmarks/compiled_under_capture.py ) 2>&1 | grep -v "Warning" | tail -n 2 >> "$OUT/under36.txt"; done
    cat "$OUT/under36.txt"
    ;;
  slowmode36)  # issue 36: why some tenprof runs of compiled GPT-2 are slower as a whole (recorded and timed steps alike): SLOW_RUNS rounds (default 5) of a plain run and a tenprof run, each pinned to PIN_CPUS (default 2-5), the machine's processes listed before each, every thread's CPU time of both runs sampled (benchmarks/thread_cpu.py), and the CUPTI teardowns still waiting at each session's start; SLOW_AB=1: even rounds' tenprof runs see each stop's teardown through at the stop (TENPROF_TEARDOWN_AT_STOP=1); text in $OUT/slowmode36.txt
    S="$OUT/slowmode36.txt"
    C=(examples/compiled_train.py --model gpt2 --mode default --steps 37 --warmup 3)
    for r in $(seq 1 "${SLOW_RUNS:-5}"); do
      { echo "== round $r $(date -u +%H:%M:%S)"; ps -eo pid,ppid,stat,etime,pcpu,rss,comm --sort=-pcpu | head -n 15; free -m | head -2; df -h /tmp | tail -1; nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; } >> "$S" 2>&1
      ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 benchmarks/thread_cpu.py "$OUT/slowmode36-r$r-plain.jsonl" -- python3 "${C[@]}" ) 2>&1 | grep -E "loop_s=|^exit| pid " | head -n 14 | sed "s|^|r$r plain |" >> "$S"
      ab=""; [ "${SLOW_AB:-0}" = 1 ] && [ $((r % 2)) = 0 ] && ab="TENPROF_TEARDOWN_AT_STOP=1"
      echo "r$r tenprof with: ${ab:-the default}" >> "$S"
      ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" env $ab python3 benchmarks/thread_cpu.py "$OUT/slowmode36-r$r.jsonl" -- tenprof run --quiet --overhead-steps 7 -o "$WORK/prof/slow$r" "${C[@]}" ) 2>&1 | tail -n 30 | sed "s|^|r$r tenprof |" >> "$S"
      steps_of "$WORK/prof/slow$r" | sed "s|^|r$r steps |" >> "$S"
      passes "$WORK/prof/slow$r" | sed "s|^|r$r passes |" >> "$S"
      python3 -c "import gzip,json,sys; d=json.load(gzip.open(sys.argv[1])); print('teardowns pending [step, waiting, started]:', d.get('cupti_teardowns_pending'), 'end:', d.get('cupti_teardown_wait'))" "$WORK/prof/slow$r/timeline/raw/callsites.json.gz" | sed "s|^|r$r |" >> "$S"
      rm -rf "$WORK/prof/slow$r"
    done
    gzip -f "$OUT"/slowmode36-r*.jsonl
    ;;
  clocks36)  # issue 36: compiled GPT-2's steps timed with the capture off beside a plain run's same steps: wall, main-thread CPU and GC per step (benchmarks/step_clocks.py), CLOCKS_RUNS rounds (default 3), each process pinned to PIN_CPUS (default 2-5); CLOCKS_ARGS replaces the command; text in $OUT/clocks36.txt
    K="$OUT/clocks36.txt"
    read -r -a C <<< "${CLOCKS_ARGS:-examples/compiled_train.py --model gpt2 --mode default --steps 37 --warmup 3}"
    # one plain run first so that every round finds the compile cache warm
    ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 "${C[@]}" ) 2>&1 | grep "loop_s=" | sed "s|^|warm-up |" >> "$K"
    for r in $(seq 1 "${CLOCKS_RUNS:-3}"); do
      echo "== round $r $(date -u +%H:%M:%S) ${C[*]}" >> "$K"
      ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 benchmarks/step_marks.py "$WORK/marks$r.json" "${C[@]}" ) 2>&1 | grep "loop_s=" >> "$K"
      ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" tenprof run --quiet --overhead-steps 7 -o "$WORK/prof/clocks$r" "${C[@]}" ) 2>&1 | grep "loop_s=" >> "$K"
      python3 benchmarks/step_clocks.py "$WORK/prof/clocks$r" "$WORK/marks$r.json" --json "$OUT/clocks36-r$r.json" >> "$K" 2>&1
      rm -rf "$WORK/prof/clocks$r"
    done
    python3 benchmarks/step_clocks.py --pool "$OUT"/clocks36-r*.json >> "$K" 2>&1
    cat "$K"
    ;;
  fix36)  # issue 36: compiled GPT-2 with Inductor's origin comments off by default (--compiled-lines asks for them): a plain run (warming the compile cache), a plain run's step marks and a tenprof run, the run's timed steps against the plain run's (benchmarks/step_clocks.py), how many distinct Triton kernels the tenprof run launched (440 with the comments, 45 without, 2026-12-08) and the compiled report's lines (from Inductor's provenance tracking), then tests/gpu/test_gpu_compiled_lines.py; pinned to PIN_CPUS (default 2-5); text in $OUT/fix36.txt
    K="$OUT/fix36.txt"
    C=(examples/compiled_train.py --model gpt2 --mode default --steps 16 --warmup 3)
    ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 "${C[@]}" ) 2>&1 | grep "loop_s=" | sed "s|^|warm-up $(date -u +%H:%M:%S) |" >> "$K"
    ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 benchmarks/step_marks.py "$WORK/marks.json" "${C[@]}" ) 2>&1 | grep "loop_s=" | sed "s|^|plain $(date -u +%H:%M:%S) |" >> "$K"
    ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" tenprof run --quiet -o "$WORK/prof/fix" "${C[@]}" ) 2>&1 | grep "loop_s=\|tenprof:" | sed "s|^|tenprof $(date -u +%H:%M:%S) |" >> "$K"
    python3 benchmarks/step_clocks.py "$WORK/prof/fix" "$WORK/marks.json" --json "$OUT/fix36.json" >> "$K" 2>&1
    python3 -c "import sys; from tenprof.store.profile import load_profile as L; n=L(sys.argv[1]).table('kernels').column('name').to_pylist(); t={x for x in n if x.startswith('triton_')}; print('distinct Triton kernels launched', len(t), 'launches', sum(x.startswith('triton_') for x in n))" "$WORK/prof/fix" >> "$K" 2>&1
    # the kernels' lines from Inductor's provenance tracking (no origin comments): the compiled report's shares
    tenprof report "$WORK/prof/fix" --limit 4 2>&1 | sed -n '/^Compiled code/,/^$/p' | head -n 16 >> "$K"
    python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gpu_compiled_lines.py 2>&1 | tail -n 8 >> "$K"
    cat "$K"
    ;;
  cause36)  # issue 36: why compiled GPT-2's steps timed un-profiled read 1.2-1.5x a plain run's (2026-12-07): every Python call of steps 9-11 (timed un-profiled under tenprof) counted in a plain run and a tenprof run (benchmarks/step_calls.py), with Inductor's launchers as each run left them, and their difference; then the fixtures overhead/mlp_gpu_periods and overhead/host_ahead (timed steps with GPU periods) and the GPU-clock test; pinned to PIN_CPUS (default 2-5); text in $OUT/cause36.txt (a control: a plain run with torch.profiler over steps 0-5, STEP_CALLS_KINETO)
    K="$OUT/cause36.txt"
    C=(examples/compiled_train.py --model gpt2 --mode default --steps 16 --warmup 3)
    ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 "${C[@]}" ) 2>&1 | grep "loop_s=" | sed "s|^|warm-up $(date -u +%H:%M:%S) |" >> "$K"
    ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 benchmarks/step_calls.py "$OUT/calls36-plain.json" 9-11 "${C[@]}" ) 2>&1 | grep "loop_s=\|Error" | sed "s|^|calls plain $(date -u +%H:%M:%S) |" >> "$K"
    ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" tenprof run --quiet -o "$WORK/prof/calls" benchmarks/step_calls.py "$OUT/calls36-tenprof.json" 9-11 "${C[@]}" ) 2>&1 | grep "loop_s=\|Error\|tenprof:" | sed "s|^|calls tenprof $(date -u +%H:%M:%S) |" >> "$K"
    steps_of "$WORK/prof/calls" >> "$K" 2>&1
    python3 benchmarks/step_calls.py --diff "$OUT/calls36-plain.json" "$OUT/calls36-tenprof.json" 60 >> "$K" 2>&1
    # the control: a plain run whose steps 0-5 ran under torch.profiler (stopped, CUPTI torn down) before steps 9-11
    ( cd "$REPO" && STEP_CALLS_KINETO=6 taskset -c "${PIN_CPUS:-2-5}" python3 benchmarks/step_calls.py "$OUT/calls36-kineto.json" 9-11 "${C[@]}" ) 2>&1 | grep "loop_s=\|Error" | sed "s|^|calls kineto-first $(date -u +%H:%M:%S) |" >> "$K"
    python3 benchmarks/step_calls.py --diff "$OUT/calls36-plain.json" "$OUT/calls36-kineto.json" 25 >> "$K" 2>&1
    mkdir -p "$WORK/fixtures/overhead"
    ( cd "$REPO" && tenprof run --quiet -o "$WORK/fixtures/overhead/mlp_gpu_periods" examples/small_mlp.py --steps 20 --warmup 2 ) 2>&1 | tail -n 3 | sed "s|^|fixture mlp $(date -u +%H:%M:%S) |" >> "$K"
    cat > "$WORK/host_ahead.py" <<'PY'
import torch, tenprof
x = torch.ones(1, device="cuda")
for step in range(15):
    torch.cuda._sleep(8_000_000)  # the GPU's work of the step (about 4 ms on an H100); the host only queues it
    x += 1
    tenprof.step()
torch.cuda.synchronize()
PY
    ( cd "$WORK" && tenprof run --quiet -o "$WORK/fixtures/overhead/host_ahead" host_ahead.py ) 2>&1 | tail -n 3 | sed "s|^|fixture ahead $(date -u +%H:%M:%S) |" >> "$K"
    for f in mlp_gpu_periods host_ahead; do steps_of "$WORK/fixtures/overhead/$f" >> "$K" 2>&1; done
    ( cd "$WORK/fixtures" && tar czf "$OUT/fixtures36.tgz" overhead )
    python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gpu_capture.py -k "gpus_clock or cuda_is_there" 2>&1 | tail -n 15 >> "$K"
    cat "$K"
    ;;
  periods36)  # issue 36: the timed steps on the GPU's clock (capture/timed_gpu_periods.py): its GPU test, then rounds of compiled GPT-2 and the small MLP, interleaved, each one plain process (step marks) and one tenprof run, the run's timed steps (host wall, GPU period, the report's un-profiled step) against the plain run's same steps (benchmarks/step_clocks.py), pooled per workload; PERIODS_RUNS rounds each (default 8), none started after PERIODS_DEADLINE_S (default 420) s; every process pinned to PIN_CPUS (default 2-5); text in $OUT/periods36.txt
    K="$OUT/periods36.txt"
    began=$SECONDS
    if [ "${PERIODS_TEST:-1}" = 1 ]; then  # PERIODS_TEST=0: the GPU test ran in an earlier task of the call
      python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gpu_capture.py -k "gpus_clock or cuda_is_there" 2>&1 | tail -n 15 >> "$K"
    fi
    GPT2=(examples/compiled_train.py --model gpt2 --mode default --steps 37 --warmup 3)
    MLP=(examples/small_mlp.py --steps 60 --warmup 10)
    ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 "${GPT2[@]}" ) 2>&1 | grep "loop_s=" | sed "s|^|gpt2 warm-up |" >> "$K"
    one_round() {  # tag, round, then the command
      local tag=$1 r=$2; shift 2
      echo "== $tag round $r $(date -u +%H:%M:%S) $*" >> "$K"
      ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 benchmarks/step_marks.py "$WORK/marks-$tag$r.json" "$@" ) 2>&1 | grep "loop_s=" | sed "s|^|plain |" >> "$K"
      ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" tenprof run --quiet --overhead-steps 7 -o "$WORK/prof/$tag$r" "$@" ) 2>&1 | grep "loop_s=" | sed "s|^|tenprof |" >> "$K"
      python3 benchmarks/step_clocks.py "$WORK/prof/$tag$r" "$WORK/marks-$tag$r.json" --json "$OUT/periods36-$tag-r$r.json" >> "$K" 2>&1
      rm -rf "$WORK/prof/$tag$r"
    }
    for r in $(seq 1 "${PERIODS_RUNS:-8}"); do
      if (( SECONDS - began > ${PERIODS_DEADLINE_S:-420} )); then echo "round $r not started (deadline)" >> "$K"; break; fi
      one_round gpt2 "$r" "${GPT2[@]}"
      one_round mlp "$r" "${MLP[@]}"
    done
    for tag in gpt2 mlp; do
      echo "$tag pooled:" >> "$K"
      if compgen -G "$OUT/periods36-$tag-r*.json" > /dev/null; then
        python3 benchmarks/step_clocks.py --pool "$OUT"/periods36-"$tag"-r*.json >> "$K" 2>&1
      else
        echo "no round ran" >> "$K"
      fi
    done
    # the rounds' files in one archive: the device tool brings back at most 8 files from $OUT
    ( cd "$OUT" && tar czf periods36-rounds.tgz periods36-*-r*.json && rm -f periods36-*-r*.json )
    cat "$K"
    ;;
  threads36)  # issue 36: every thread's CPU time in compiled GPT-2's timed steps (TENPROF_THREAD_CLOCKS=1, capture/step_clocks.py), a plain run (which also warms the compile cache), a tenprof run and a second plain run (THREADS_SIDES=b: the last alone), pinned to PIN_CPUS (default 2-5); text in $OUT/threads36.txt
    K="$OUT/threads36.txt"
    C=(examples/compiled_train.py --model gpt2 --mode default --steps 16 --warmup 3)
    read -r -a SIDES <<< "${THREADS_SIDES:-a b}"  # "b" alone: no plain run first (tenprof's run compiles cold)
    for side in "${SIDES[@]}"; do
      if [ $side = b ]; then
        ( cd "$REPO" && TENPROF_THREAD_CLOCKS=1 taskset -c "${PIN_CPUS:-2-5}" tenprof run --quiet -o "$WORK/prof/threads" "${C[@]}" ) 2>&1 | grep "loop_s=" | sed "s|^|tenprof |" >> "$K"
      fi
      ( cd "$REPO" && TENPROF_THREAD_CLOCKS=1 taskset -c "${PIN_CPUS:-2-5}" python3 benchmarks/step_marks.py "$WORK/marks-$side.json" "${C[@]}" ) 2>&1 | grep "loop_s=" | sed "s|^|plain-$side $(date -u +%H:%M:%S) |" >> "$K"
    done
    for side in "${SIDES[@]}"; do
      echo "== against plain-$side" >> "$K"
      python3 benchmarks/step_clocks.py "$WORK/prof/threads" "$WORK/marks-$side.json" --json "$OUT/threads36-$side.json" >> "$K" 2>&1
    done
    cat "$K"
    ;;
  whichpart36)  # issue 36: which part of a tenprof run slows compiled GPT-2's timed steps on a host where they read 1.2-1.5x a plain run's (2026-12-07): rounds of a plain process before and after, and tenprof runs with the default capture, with tenprof's own CUPTI client (native-cupti), and without the sampler and NVML threads, in an order rotated each round; each run's timed steps against the first plain run's same steps (benchmarks/step_clocks.py), each config pooled; WHICH_RUNS rounds (default 4), none started after WHICH_DEADLINE_S (default 380) s; pinned to PIN_CPUS (default 2-5); text in $OUT/whichpart36.txt
    K="$OUT/whichpart36.txt"
    began=$SECONDS
    C=(examples/compiled_train.py --model gpt2 --mode default --steps 16 --warmup 3)
    ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 "${C[@]}" ) 2>&1 | grep "loop_s=" | sed "s|^|warm-up |" >> "$K"
    configs=(default cupti nothreads)
    run_config() {  # config, round
      local cfg=$1 r=$2 env=()
      case $cfg in
        cupti) env=(TENPROF_CAPTURE=native-cupti TENPROF_NATIVE_GPU=1) ;;
        nothreads) env=(TENPROF_HOST_SAMPLE_HZ=0 TENPROF_GPU_CLOCKS=0) ;;
      esac
      ( cd "$REPO" && env "${env[@]}" taskset -c "${PIN_CPUS:-2-5}" tenprof run --quiet -o "$WORK/prof/$cfg$r" "${C[@]}" ) > "$WORK/logs/$cfg$r.log" 2>&1
      grep -v "loop_s=\|print(f" "$WORK/logs/$cfg$r.log" | head -n 3 | sed "s|^|$cfg stderr: |" >> "$K"
      python3 -c "import gzip,json,sys; d=json.loads(gzip.decompress(open(sys.argv[1],'rb').read())); print('$cfg teardowns', d.get('cupti_teardowns_pending'), d.get('cupti_teardown_wait'), 'recorder', d.get('recorder'))" "$WORK/prof/$cfg$r/timeline/raw/callsites.json.gz" >> "$K" 2>&1
      python3 benchmarks/step_clocks.py "$WORK/prof/$cfg$r" "$WORK/marks-a$r.json" --json "$OUT/which36-$cfg-r$r.json" 2>&1 | tail -n 3 | sed "s|^|$cfg: |" >> "$K"
      rm -rf "$WORK/prof/$cfg$r"
    }
    for r in $(seq 1 "${WHICH_RUNS:-4}"); do
      if (( SECONDS - began > ${WHICH_DEADLINE_S:-380} )); then echo "round $r not started (deadline)" >> "$K"; break; fi
      echo "== round $r $(date -u +%H:%M:%S)" >> "$K"
      ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 benchmarks/step_marks.py "$WORK/marks-a$r.json" "${C[@]}" ) 2>&1 | grep "loop_s=" | sed "s|^|plain-a |" >> "$K"
      for k in 0 1 2; do run_config "${configs[$(( (k + r) % 3 ))]}" "$r"; done
      ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 benchmarks/step_marks.py "$WORK/marks-b$r.json" "${C[@]}" ) 2>&1 | grep "loop_s=" | sed "s|^|plain-b |" >> "$K"
      python3 - "$WORK/marks-a$r.json" "$WORK/marks-b$r.json" >> "$K" 2>&1 <<'PY'
import json, statistics, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
steps = [9, 10, 11]
med = lambda m: statistics.median((m[n + 1] - m[n]) / 1e6 for n in steps)
print(f"plain-a steps 9-11 {med(a):.2f} ms, plain-b {med(b):.2f} ms, b/a {med(b) / med(a):.3f}")
PY
    done
    for cfg in "${configs[@]}"; do
      echo "$cfg pooled:" >> "$K"
      compgen -G "$OUT/which36-$cfg-r*.json" > /dev/null && python3 benchmarks/step_clocks.py --pool "$OUT"/which36-"$cfg"-r*.json >> "$K" 2>&1
    done
    ( cd "$OUT" && tar czf which36-rounds.tgz which36-*-r*.json && rm -f which36-*-r*.json )
    cat "$K"
    ;;
  clocks36b)  # issue 36: clocks36's rounds with a control: a plain run whose recorded-step numbers are slowed by a sleep (STEP_MARKS_PAUSE, default 27 ms on the steps a 7-step plan records) and the SM clock sampled meanwhile; every step's wall of the three runs in $OUT/clocks36b.txt
    K="$OUT/clocks36b.txt"
    read -r -a C <<< "${CLOCKS_ARGS:-examples/compiled_train.py --model gpt2 --mode default --steps 37 --warmup 3}"
    PAUSE=${STEP_MARKS_PAUSE:-27:0-5,12-14,21-23,28-39}
    walls() {  # a marks file's step walls (ms), steps 0.. in order
      python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(' '.join(f'{(b-a)/1e6:.2f}' for a, b in zip(m, m[1:])))" "$1"
    }
    smclock() {  # run a command with the SM clock sampled every 20 ms; print the samples' median and range (MHz)
      nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 20 > "$WORK/sm.csv" 2>/dev/null & local pid=$!
      "$@"; kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
      python3 -c "import statistics as s,sys; r=[l.split(',') for l in open(sys.argv[1]) if ',' in l]; c=[float(a) for a,_ in r] or [0.0]; p=[float(b) for _,b in r] or [0.0]; print(f'SM clock median {s.median(c):.0f} MHz ({min(c):.0f}-{max(c):.0f}), power median {s.median(p):.0f} W, {len(c)} samples')" "$WORK/sm.csv"
    }
    ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 "${C[@]}" ) 2>&1 | grep "loop_s=" | sed "s|^|warm-up |" >> "$K"
    for r in $(seq 1 "${CLOCKS_RUNS:-3}"); do
      echo "== round $r $(date -u +%H:%M:%S) ${C[*]}" >> "$K"
      { echo "plain: $(smclock bash -c "cd $REPO && taskset -c ${PIN_CPUS:-2-5} python3 benchmarks/step_marks.py $WORK/marks$r.json ${C[*]} 2>&1 | grep loop_s=")"; } >> "$K"
      echo "plain walls: $(walls "$WORK/marks$r.json")" >> "$K"
      { echo "paused ($PAUSE): $(smclock bash -c "cd $REPO && STEP_MARKS_PAUSE=$PAUSE taskset -c ${PIN_CPUS:-2-5} python3 benchmarks/step_marks.py $WORK/paused$r.json ${C[*]} 2>&1 | grep loop_s=")"; } >> "$K"
      echo "paused walls: $(walls "$WORK/paused$r.json")" >> "$K"
      { echo "tenprof: $(smclock bash -c "cd $REPO && taskset -c ${PIN_CPUS:-2-5} tenprof run --quiet --overhead-steps 7 -o $WORK/prof/clocks$r ${C[*]} 2>&1 | grep loop_s=")"; } >> "$K"
      steps_of "$WORK/prof/clocks$r" | tail -n +2 | awk '{printf "%s:%s:%s ", $1, $2, $3} END {print ""}' | sed "s|^|tenprof step:capture:own |" >> "$K"
      python3 benchmarks/step_clocks.py "$WORK/prof/clocks$r" "$WORK/marks$r.json" --json "$OUT/clocks36b-r$r.json" >> "$K" 2>&1
      python3 benchmarks/step_clocks.py "$WORK/prof/clocks$r" "$WORK/paused$r.json" 2>&1 | tail -n 1 | sed "s|^|against the paused run: |" >> "$K"
      rm -rf "$WORK/prof/clocks$r"
    done
    python3 benchmarks/step_clocks.py --pool "$OUT"/clocks36b-r*.json >> "$K" 2>&1
    cat "$K"
    ;;
  pinned36)  # issue 36: the run's un-profiled steps against the plain loop over many processes, each pinned to the same cores (PIN_CPUS, default 2-5) so placement is not a difference; TIMED_WORKLOADS, TIMED_REPEATS, TIMED_DEADLINE_MIN; the ratio with its interval by benchmarks/timed_ratio.py; text in $OUT/pinned36.txt
    P="$OUT/pinned36.txt"
    { lscpu | grep -E "^(Model name|CPU\(s\)|NUMA|Thread|Core|Socket)"; nvidia-smi topo -m; } >> "$P" 2>&1
    ( cd "$REPO" && taskset -c "${PIN_CPUS:-2-5}" python3 benchmarks/overhead.py --workloads "${TIMED_WORKLOADS:-mlp}" --configs plain,tenprof-timed --repeats "${TIMED_REPEATS:-12}" --deadline-min "${TIMED_DEADLINE_MIN:-8}" --json "$OUT/" ) >> "$P" 2>&1
    python3 benchmarks/timed_ratio.py "$OUT"/*.json | tee -a "$P"
    ;;
  same36)  # issue 36: the run's timed steps against the plain loop's own steps of the same numbers (benchmarks/step_marks.py) and against its whole loop (TIMED_WORKLOADS, TIMED_REPEATS, TIMED_DEADLINE_MIN); text in $OUT/same36.txt
    python3 benchmarks/overhead.py --workloads "${TIMED_WORKLOADS:-mlp,gpt2-compiled}" --configs plain,tenprof-timed --repeats "${TIMED_REPEATS:-3}" --deadline-min "${TIMED_DEADLINE_MIN:-8}" --json "$OUT/" > "$OUT/same36.txt" 2>&1
    ;;
  which36)  # issue 36: which part of tenprof's capture slows the steps it times un-profiled (small MLP, 200 steps; tenprof light and full against plain, interleaved twice); text in $OUT/which36.txt
    W="$OUT/which36.txt"
    timed_of() {  # the timed steps (capture off, own time > 0) of a profile, in ms
      steps_of "$1" | awk '$2 == 0 && $3 > 0 {printf "%s ", $3}'
    }
    for r in 1 2; do
      for v in plain full nolines nosampler light; do
        case $v in
          plain) ( cd "$REPO" && python3 examples/small_mlp.py --steps 200 --warmup 10 ) 2>&1 | sed "s|^|r$r plain |" >> "$W"; continue ;;
          full) opts=""; hz="" ;;
          nolines) opts="--no-lines"; hz="" ;;
          nosampler) opts=""; hz=0 ;;
          light) opts="--no-lines --no-shapes --no-memory"; hz=0 ;;
        esac
        ( cd "$REPO" && TENPROF_HOST_SAMPLE_HZ=${hz} tenprof run --quiet $opts --overhead-steps 8 -o "$WORK/prof/$v" examples/small_mlp.py --steps 200 --warmup 10 ) > "$WORK/logs/$v.log" 2>&1
        echo "r$r $v timed: $(timed_of "$WORK/prof/$v")" >> "$W"
        rm -rf "$WORK/prof/$v"
      done
    done
    ;;
  settle36)  # issue 36: the run's timed steps, each after an untimed one that settles the profiler's stop, against the plain loop (TIMED_WORKLOADS, TIMED_REPEATS, TIMED_DEADLINE_MIN); the small-MLP fixture re-recorded; text in $OUT/settle36.txt
    S="$OUT/settle36.txt"
    ( cd "$REPO" && tenprof run --quiet -o "$WORK/prof/mlp_stopped" examples/small_mlp.py --steps 20 --warmup 2 ) > "$WORK/logs/mlp_stopped.log" 2>&1
    steps_of "$WORK/prof/mlp_stopped" >> "$S" 2>&1
    tenprof report "$WORK/prof/mlp_stopped" --limit 1 2>&1 | sed -n '/^Overhead/,/^Per step/p' >> "$S"
    tar -C "$WORK" -czf "$OUT/settle36.tgz" prof/mlp_stopped logs
    python3 benchmarks/overhead.py --workloads "${TIMED_WORKLOADS:-mlp,gpt2-compiled}" --configs plain,tenprof-timed --repeats "${TIMED_REPEATS:-3}" --deadline-min "${TIMED_DEADLINE_MIN:-8}" --keep-profiles "$WORK/timed" --json "$OUT/" >> "$S" 2>&1
    for d in "$WORK"/timed/*/tenprof-timed-r*; do
      [ -d "$d" ] && { echo "== $d"; steps_of "$d" | awk 'NR == 1 || $1 < 20'; tenprof report "$d" --limit 1 2>&1 | sed -n '/^Overhead/,/^Per step/p'; } >> "$S" 2>&1
    done
    rm -rf "$WORK/timed"
    ;;
  diag36b)  # issue 36: why the run's timed steps are slower than the plain loop: the first step after a stopped session, Python's GC, steps long after the capture; then final36b; text in $OUT/diag36b.txt
    D="$OUT/diag36b.txt"
    python3 benchmarks/toggle_probe.py --workload mlp --steps 50 --rounds 3 2>&1 | grep -v "^\[W\|USDT" >> "$D"
    for r in 1 2; do
      for gc in "" examples/nogc.py; do
        ( cd "$REPO" && python3 $gc examples/small_mlp.py --steps 200 --warmup 10 ) 2>&1 | sed "s|^|plain r$r gc=${gc:-on} |" >> "$D"
        ( cd "$REPO" && tenprof run --quiet --overhead-steps 6 -o "$WORK/prof/mlp_r$r" $gc examples/small_mlp.py --steps 200 --warmup 10 ) > "$WORK/logs/mlp_r$r.log" 2>&1
        echo "tenprof r$r gc=${gc:-on} off steps: $(steps_of "$WORK/prof/mlp_r$r" | awk '$2 == 0 {printf "%s ", $3}') recorded 4-30: $(steps_of "$WORK/prof/mlp_r$r" | awk '$2 == 1 && $1 > 3 && $1 < 30 {printf "%s ", $3}')" >> "$D"
        rm -rf "$WORK/prof/mlp_r$r"
      done
    done
    ( cd "$REPO" && tenprof run --quiet --schedule wait=1,warmup=1,active=10 --overhead-steps 40 -o "$WORK/prof/mlp_sched" examples/small_mlp.py --steps 200 --warmup 10 ) > "$WORK/logs/mlp_sched.log" 2>&1
    echo "schedule run, steps 13-52 off: $(steps_of "$WORK/prof/mlp_sched" | awk '$2 == 0 {printf "%s ", $3}')" >> "$D"
    rm -rf "$WORK/prof/mlp_sched"
    ;;
  final36b)  # issue 36: slow_step's torch.profiler traces each in its own process; fp32 GPT-2 and GPT-2 generate() recorded with the stopped-session capture (report text only); fp32 GPT-2 and the MLP timed against the plain loop; text in $OUT/final36b.txt
    F="$OUT/final36b.txt"
    python3 benchmarks/corpus_record.py "$WORK/corpus" --only slow_step --modes traces >> "$F" 2>&1
    tar -C "$WORK" -czf "$OUT/final36b.tgz" corpus
    ( cd "$REPO" && tenprof run --quiet -o "$WORK/prof/gpt2_fp32" examples/gpt2_fp32.py --steps 20 --warmup 3 ) > "$WORK/logs/gpt2_fp32.log" 2>&1
    { echo "== gpt2_fp32"; steps_of "$WORK/prof/gpt2_fp32"; tenprof report "$WORK/prof/gpt2_fp32" --limit 3 2>&1 | head -n 75; } >> "$F" 2>&1
    ( cd "$REPO" && tenprof run --quiet -o "$WORK/prof/gpt2_generate" examples/gpt2_generate.py --tokens 48 ) > "$WORK/logs/gpt2_generate.log" 2>&1
    { echo "== gpt2_generate exit=$?"; tenprof report "$WORK/prof/gpt2_generate" --limit 4 2>&1 | head -n 70; } >> "$F" 2>&1
    rm -rf "$WORK/prof/gpt2_fp32" "$WORK/prof/gpt2_generate"
    [ "${TIMED_WORKLOADS:-}" = none ] || python3 benchmarks/overhead.py --workloads "${TIMED_WORKLOADS:-gpt2-fp32,mlp}" --configs plain,tenprof-timed --repeats "${TIMED_REPEATS:-2}" --deadline-min "${TIMED_DEADLINE_MIN:-4}" --json "$OUT/" >> "$F" 2>&1
    ;;
  stop36)  # issue 36: the run's timed steps with torch.profiler stopped for them, against the plain loop (TIMED_WORKLOADS, TIMED_REPEATS, TIMED_DEADLINE_MIN); a small-MLP fixture recorded that way; text in $OUT/stop36.txt
    S="$OUT/stop36.txt"
    ( cd "$REPO" && tenprof run --quiet -o "$WORK/prof/mlp_stopped" examples/small_mlp.py --steps 20 --warmup 2 ) > "$WORK/logs/mlp_stopped.log" 2>&1
    steps_of "$WORK/prof/mlp_stopped" >> "$S" 2>&1
    ls -la "$WORK/prof/mlp_stopped/timeline/raw" >> "$S" 2>&1
    tenprof report "$WORK/prof/mlp_stopped" --limit 3 >> "$S" 2>&1
    tar -C "$WORK" -czf "$OUT/stop36.tgz" prof/mlp_stopped logs
    python3 benchmarks/overhead.py --workloads "${TIMED_WORKLOADS:-mlp,gpt2-compiled}" --configs plain,tenprof-timed --repeats "${TIMED_REPEATS:-3}" --deadline-min "${TIMED_DEADLINE_MIN:-7}" --keep-profiles "$WORK/timed" --json "$OUT/" >> "$S" 2>&1
    for d in "$WORK"/timed/*/tenprof-timed-r*; do
      [ -d "$d" ] && { echo "== $d"; steps_of "$d"; tenprof report "$d" --limit 2 2>&1 | sed -n '/^Overhead/,/^aten ops/p'; } >> "$S" 2>&1
    done
    rm -rf "$WORK/timed"
    ;;
  stopprobe36)  # issue 36: does a stopped torch.profiler session leave the loop as fast as plain (toggled off does not)? and torch.profiler traces of four more corpus pairs; text in $OUT/stopprobe36.txt
    S="$OUT/stopprobe36.txt"
    python3 benchmarks/toggle_probe.py --workload mlp --steps 50 --rounds 3 >> "$S" 2>&1
    python3 benchmarks/toggle_probe.py --workload gpt2-compiled --steps 8 --rounds 3 >> "$S" 2>&1
    python3 benchmarks/toggle_probe.py --workload mlp --steps 50 --rounds 3 >> "$S" 2>&1
    python3 benchmarks/corpus_record.py "$WORK/corpus" --only "${CORPUS_ONLY:-slow_collate,recompile,compile_tiny,slow_step}" --modes traces --deadline-s "${CORPUS_DEADLINE_S:-150}" >> "$S" 2>&1
    tar -C "$WORK" -czf "$OUT/stopprobe36.tgz" corpus
    ;;
  decomp36c)  # issue 36: decomp36 with the profiles kept ($OUT/decomp36c-profiles.tgz) and each report's --json beside its text, under DECOMP_CAPTURE (default: the default capture); text in $OUT/decomp36c.txt
    D="$OUT/decomp36c.txt"; mkdir -p "$WORK/decomp"
    for w in "small_mlp examples/small_mlp.py --steps 40 --warmup 5" "gpt2_fp32 examples/gpt2_fp32.py --steps 12 --warmup 3" "gpt2_compiled examples/compiled_train.py --model gpt2 --mode default --steps 17 --warmup 3"; do
      # (not `set -- $w`: that would clobber the task list this loop walks)
      read -r name cmd <<< "$w"
      ( cd "$REPO" && timeout 240 tenprof run --quiet ${DECOMP_CAPTURE:+--capture $DECOMP_CAPTURE} ${DECOMP_OPS:+--ops $DECOMP_OPS} -o "$WORK/decomp/$name" $cmd ) > "$WORK/logs/d_$name.log" 2>&1
      echo "== $name ($cmd) capture=${DECOMP_CAPTURE:-default} ops=${DECOMP_OPS:-every} exit=$? $(date -u +%H:%M:%S)" >> "$D"
      tenprof report "$WORK/decomp/$name" --limit 4 >> "$D" 2>&1
      tenprof report "$WORK/decomp/$name" --json > "$WORK/decomp/$name.report.json" 2>> "$D"
    done
    # the tables alone: with the raw traces the three came to 63 MB, over what a call brings back
    tar -C "$WORK/decomp" -czf "$OUT/decomp36c-${DECOMP_CAPTURE:-default}-profiles.tgz" --exclude='raw' . && ls -la "$OUT"/decomp36c-*profiles.tgz >> "$D"
    ;;
  decomp36)  # issue 36: where each step went on fp32 GPT-2, compiled GPT-2 and the small MLP, as `tenprof run` reports it; text in $OUT/decomp36.txt
    D="$OUT/decomp36.txt"
    for w in "gpt2_fp32 examples/gpt2_fp32.py --steps 12 --warmup 3" "gpt2_compiled examples/compiled_train.py --model gpt2 --mode default --steps 17 --warmup 3" "small_mlp examples/small_mlp.py --steps 40 --warmup 5"; do
      read -r name cmd <<< "$w"  # (not `set -- $w`: that would clobber the task list this loop walks)
      ( cd "$REPO" && timeout 240 tenprof run --quiet -o "$WORK/prof/d_$name" $cmd ) > "$WORK/logs/d_$name.log" 2>&1
      echo "== $name ($cmd) exit=$?" >> "$D"
      tenprof report "$WORK/prof/d_$name" --limit 3 2>&1 | sed -n '/^Findings/,/^[23]\. /p;/^Overhead/,/^Memory/p;/^Where each step went/,/^Per step/p' >> "$D"
    done
    cat "$D"
    ;;
  retime36b)  # issue 36: pairs whose cost and saving differ by more than 25% timed again, RETIME_ROUNDS rounds (default 4), trigger and twin interleaved; timings in $OUT/retime36b-timings.jsonl
    for k in $(seq "${RETIME_ROUNDS:-4}"); do
      python3 benchmarks/corpus_record.py "$WORK/corpus_r" --only "${CORPUS_ONLY:-launch_graph,graph_break,empty_cache,variance,channels_last}" --modes time 2>&1 | tee -a "$OUT/retime36b.txt"
      cp "$WORK/corpus_r/timings.jsonl" "$OUT/retime36b-timings.jsonl"
    done
    ;;
  compiled36)  # issue 36 section 3: compiled GPT-2's timed steps, step by step, against a plain run's same steps; default, --no-lines and light captures, Dynamo's recompiles logged; text in $OUT/compiled36.txt
    C="$OUT/compiled36.txt"
    marks() {  # a plain run's step times (ms) at every step number
      python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print('plain', ' '.join(f'{n}:{(m[n+1]-m[n])/1e6:.2f}' for n in range(1, len(m)-1)))" "$1"
    }
    ARGS="examples/compiled_train.py --model gpt2 --mode default --steps 37 --warmup 3"
    for r in 1 2; do
      ( cd "$REPO" && python3 benchmarks/step_marks.py "$WORK/cmarks$r.json" $ARGS ) > "$WORK/logs/cmarks$r.log" 2>&1
      marks "$WORK/cmarks$r.json" >> "$C"
      for v in default nolines light; do
        [ $r = 2 ] && [ $v != default ] && continue
        extra=""; [ $v = nolines ] && extra="--no-lines"; [ $v = light ] && extra="--no-lines --no-shapes --no-memory"
        ( cd "$REPO" && TORCH_LOGS=recompiles timeout 200 tenprof run --quiet --overhead-steps 7 $extra -o "$WORK/prof/c_${v}_$r" $ARGS ) > "$WORK/logs/c_${v}_$r.log" 2>&1
        echo "== $v run $r exit=$? recompiles=$(grep -c 'Recompiling' "$WORK/logs/c_${v}_$r.log")" >> "$C"
        grep -m3 -A3 "Recompiling" "$WORK/logs/c_${v}_$r.log" | cut -c1-300 >> "$C"
        python3 -c "import sys; from tenprof.store.profile import load_profile as L; s=L(sys.argv[1]).table('steps').to_pydict(); print('$v', ' '.join(f'{n}:{d/1e6:.2f}' + ('*' if not c else '') for n, c, d in zip(s['step'], s['capture_on'], s['own_duration_ns']) if n > 0))" "$WORK/prof/c_${v}_$r" >> "$C" 2>&1
        cat "$C" | tail -n 3
      done
    done
    cat "$C"
    ;;
  teardown36b)  # issue 36 section 3: tenprof with CUPTI torn down at each stop: a CUDA-graph run still records, then the timed steps against the plain loop (same36)
    record graph_teardown examples/findings/launch_graph.py --steps 12 --fixed > "$OUT/graph_teardown.txt" 2>&1
    grep -E "exit=|^[0-9]+\. " "$WORK/logs/graph_teardown.log" | head -5 | tee -a "$OUT/graph_teardown.txt"
    steps_of "$WORK/prof/graph_teardown" | tee -a "$OUT/graph_teardown.txt"
    python3 benchmarks/overhead.py --workloads "${TIMED_WORKLOADS:-mlp,gpt2-compiled}" --configs plain,tenprof-timed --repeats "${TIMED_REPEATS:-3}" --deadline-min "${TIMED_DEADLINE_MIN:-6}" --json "$OUT/" > "$OUT/teardown36b.txt" 2>&1
    tail -n 40 "$OUT/teardown36b.txt"
    ;;
  teardown36)  # issue 36 section 3: does Kineto leave CUPTI attached after a stop? torch.profiler alone, TEARDOWN_CUPTI unset, 1 and 0, each in its own process, twice
    for r in 1 2; do
      for t in unset 1 0; do
        if [ $t = unset ]; then python3 benchmarks/toggle_probe.py --workload mlp --steps 30 --rounds 4 --record all;
        else TEARDOWN_CUPTI=$t python3 benchmarks/toggle_probe.py --workload mlp --steps 30 --rounds 4 --record all; fi 2>&1 | grep -v "^\[W\|_warn_once\|UserWarning" >> "$OUT/teardown36.txt"
      done
    done
    cat "$OUT/teardown36.txt"
    ;;
  drift36)  # issue 36 section 3: do the timed steps drift with each stop and start of the session? small MLP, 7 timed steps, against the plain loop's same steps
    D="$OUT/drift36.txt"
    marks() {  # a plain run's step times (ms) at the timed steps' numbers
      python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print('plain', ' '.join(f'{n}:{(m[n+1]-m[n])/1e6:.3f}' for n in range(1, len(m)-1)))" "$1"
    }
    for r in 1 2; do
      ( cd "$REPO" && python3 benchmarks/step_marks.py "$WORK/marks$r.json" examples/small_mlp.py --steps 40 --warmup 2 ) > /dev/null 2>&1
      marks "$WORK/marks$r.json" >> "$D"
      for v in default light; do
        extra=""; [ $v = light ] && extra="--no-lines --no-shapes --no-memory"
        ( cd "$REPO" && tenprof run --quiet --overhead-steps 7 $extra -o "$WORK/prof/drift_${v}_$r" examples/small_mlp.py --steps 40 --warmup 2 ) > "$WORK/logs/drift_${v}_$r.log" 2>&1
        echo "== $v run $r exit=$?" >> "$D"
        python3 -c "import sys; from tenprof.store.profile import load_profile as L; s=L(sys.argv[1]).table('steps').to_pydict(); print('$v', ' '.join(f'{n}:{d/1e6:.3f}' + ('*' if not c else '') for n, c, d in zip(s['step'], s['capture_on'], s['own_duration_ns']) if n > 0))" "$WORK/prof/drift_${v}_$r" >> "$D" 2>&1
      done
    done
    python3 benchmarks/toggle_probe.py --workload mlp --steps 30 --rounds 5 --record all >> "$D" 2>&1
    cat "$D"
    ;;
  ddp36t)  # issue 36: the DDP pair timed again un-profiled (three rounds, trigger and twin interleaved; rank 0 prints)
    for k in 1 2 3; do python3 benchmarks/corpus_record.py "$WORK/corpus_t" --only ddp_no_sync --modes time 2>&1 | tee -a "$OUT/ddp36t.txt"; done
    cp "$WORK/corpus_t/timings.jsonl" "$OUT/ddp36t-timings.jsonl"
    ;;
  ddp36)  # issue 36: the DDP pair (gradient accumulation without no_sync) on 2 GPUs: tenprof run, timings, torch.profiler traces
    nvidia-smi -L | tee -a "$OUT/ddp36.txt"
    for v in "" _fixed; do
      ( cd "$REPO" && tenprof run --quiet -l "python3 -m torch.distributed.run --nproc-per-node 2" -o "$WORK/prof/finding_ddp_no_sync$v" examples/findings/ddp_no_sync.py --steps 10 ${v:+--fixed} ) > "$WORK/logs/ddp_no_sync$v.log" 2>&1
      echo "exit=$?" >> "$WORK/logs/ddp_no_sync$v.log"
      tail -n 5 "$WORK/logs/ddp_no_sync$v.log"
      for r in 0 1; do
        tenprof report "$WORK/prof/finding_ddp_no_sync$v" --rank $r --limit 4 > "$OUT/ddp_no_sync${v}_rank$r.txt" 2>&1
        grep -E "^[0-9]+\. " "$OUT/ddp_no_sync${v}_rank$r.txt" | sed "s|^|ddp_no_sync$v rank $r: |" | tee -a "$OUT/ddp36.txt"
      done
      tenprof report "$WORK/prof/finding_ddp_no_sync$v" > "$OUT/ddp_no_sync${v}_merged.txt" 2>&1
      steps_of "$WORK/prof/finding_ddp_no_sync$v/rank00000" | tee -a "$OUT/ddp36.txt"
    done
    tar -C "$WORK/prof" -czf "$OUT/ddp36-prof.tgz" finding_ddp_no_sync finding_ddp_no_sync_fixed
    python3 benchmarks/corpus_record.py "$WORK/corpus" --only ddp_no_sync 2>&1 | tee -a "$OUT/ddp36.txt"
    for k in 2 3; do python3 benchmarks/corpus_record.py "$WORK/corpus" --only ddp_no_sync --modes time 2>&1 | tee -a "$OUT/ddp36.txt"; done
    cp "$WORK/corpus/timings.jsonl" "$OUT/ddp36-timings.jsonl"
    tar -C "$WORK" -czf "$OUT/ddp36-traces.tgz" corpus/traces
    ;;
  corpus36)  # issue 36: every corpus pair timed un-profiled and recorded with plain torch.profiler (CORPUS_ONLY, CORPUS_MODES, CORPUS_DEADLINE_S); CORPUS_MODES=run records them with tenprof run (at least 12 steps, so the default plan times three)
    python3 benchmarks/corpus_record.py "$WORK/corpus" --only "${CORPUS_ONLY:-}" --modes "${CORPUS_MODES:-time,traces}" --deadline-s "${CORPUS_DEADLINE_S:-400}" 2>&1 | tee -a "$OUT/corpus36.txt"
    tar -C "$WORK" -czf "$OUT/corpus36-$(date +%s).tgz" corpus  # one file: a call brings back only so many
    ;;
  esac
  # after every task, so a call cut off by its time limit still brings back what was recorded
  tar -C "$WORK" -czf "$OUT/${RECORDINGS:-recordings}.tgz" prof logs 2>/dev/null
done
ls -la "$OUT"

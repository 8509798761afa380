"""Names the Nsight Compute side and the importers agree on: the NVTX ranges the counters and stalls
child pushes (the launcher keeps only kernels inside KEEP_RANGE; the importers read the op, scope and
compiled-kernel ranges back) and the ncu metrics the counters pass collects, with the column each becomes."""

KEEP_RANGE = "tenprof_keep"
OP_RANGE_PREFIX = "tp:"
SCOPE_RANGE_PREFIX = "ts:"
COMPILED_RANGE_PREFIX = "tk:"  # + the generated Triton kernel's name (torch.compile)

# ncu metric name -> tenprof column. Chosen so one replay needs few passes; every name was checked to
# exist on an H200 with Nsight Compute 2025.3.1.
METRICS: dict[str, str] = {
    "gpu__time_duration.sum": "duration_ns",
    "dram__bytes_read.sum": "dram_read_bytes",
    "dram__bytes_write.sum": "dram_write_bytes",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_throughput_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "l1tex__t_sector_hit_rate.pct": "l1_hit_rate_pct",
    "lts__t_sector_hit_rate.pct": "l2_hit_rate_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": "tensor_pipe_pct",
    "smsp__inst_executed.sum": "instructions",
    "launch__waves_per_multiprocessor": "waves_per_sm",
    "launch__grid_size": "grid_size",
    "launch__block_size": "block_size",
    "launch__registers_per_thread": "registers_per_thread",
    "launch__occupancy_limit_registers": "occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem": "occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps": "occupancy_limit_warps",
    "launch__occupancy_limit_blocks": "occupancy_limit_blocks",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": "ffma",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": "fadd",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": "fmul",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum": "hfma",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum": "hadd",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum": "hmul",
}

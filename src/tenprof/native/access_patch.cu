// Device side of the access pass: compute-sanitizer patches called where a kernel reads or writes
// global memory (plain loads/stores/atomics, cp.async copies to shared memory, bulk copies).
//
// Sampling, decided per warp access by its first active lane and shared with the other lanes: the first
// `first` accesses of each PC slot are all kept (weight 1), so small kernels are seen whole; after that,
// only the accesses of one warp in `every` (chosen by a hash of the warp's place in the grid, the same
// for every lane, weighted by `every`). Once a slot is past `first`, an access costs a plain load of its
// counter and the hash: no atomic on a counter every warp shares. Records past the buffer's capacity
// are counted (as dropped weight), never written out of bounds.
//
// For each kept access the active lanes compare their addresses: how many distinct 32-byte sectors they
// touch, and the stride between neighbouring lanes (whether it is the same for all), so the host can
// tell coalesced, strided, broadcast and gathered reads apart.
#include <sanitizer_patching.h>

#include "access_format.h"

namespace {

__device__ __forceinline__ uint32_t lane_id() {
    uint32_t lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

// The warp's number in the grid (the same for all its lanes).
__device__ __forceinline__ uint64_t warp_in_grid() {
    const uint64_t block = blockIdx.x + uint64_t(gridDim.x) * (blockIdx.y + uint64_t(gridDim.y) * blockIdx.z);
    const uint32_t threads = blockDim.x * blockDim.y * blockDim.z;
    const uint32_t thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    return block * ((threads + 31u) / 32u) + thread / 32u;
}

__device__ __forceinline__ bool warp_sampled(uint32_t every) {
    uint64_t h = warp_in_grid() * 0x9E3779B97F4A7C15ull;  // Fibonacci hashing: neighbouring warps spread out
    h ^= h >> 29;
    return (h % every) == 0;
}

// The first active lane's decision: -1 (not kept), else the record slot; weight out.
__device__ __forceinline__ long long claim(TenprofAccessBuffer* buffer, uint64_t pc, uint32_t* weight) {
    uint32_t* count = &buffer->pc_counts[(pc >> 4) & (TENPROF_PC_SLOTS - 1)];
    *weight = 1;
    if (*reinterpret_cast<volatile uint32_t*>(count) >= buffer->first || atomicAdd(count, 1u) >= buffer->first) {
        if (!warp_sampled(buffer->every)) return -1;
        *weight = buffer->every;
    }
    const unsigned long long slot = atomicAdd(&buffer->used, 1ull);
    if (slot >= buffer->capacity) {
        atomicAdd(&buffer->dropped_weight, static_cast<unsigned long long>(*weight));
        return -1;
    }
    return static_cast<long long>(slot);
}

// Called by every active lane with its own address: keeps one record for the warp.
__device__ __forceinline__ void record_warp_access(TenprofAccessBuffer* buffer, uint64_t pc, uint64_t address,
                                                   uint32_t access_size, uint32_t flags) {
    const uint32_t active = __activemask();
    const uint32_t lane = lane_id();
    const uint32_t leader = static_cast<uint32_t>(__ffs(active) - 1);
    // Past the first accesses of a slot, a warp that is not sampled leaves at once, every lane alike: the
    // lanes may read the counter on either side of another warp's increment, so they vote (a lane that
    // left alone would be missing from the shuffles below).
    const bool past_first = __all_sync(
        active,
        *reinterpret_cast<volatile uint32_t*>(&buffer->pc_counts[(pc >> 4) & (TENPROF_PC_SLOTS - 1)]) >= buffer->first);
    if (past_first && !warp_sampled(buffer->every)) return;
    long long slot = -1;
    uint32_t weight = 0;
    if (lane == leader) slot = claim(buffer, pc, &weight);
    slot = __shfl_sync(active, slot, leader);
    if (slot < 0) return;
    // distinct sectors: lanes that are the lowest of those sharing their sector
    const uint32_t same_sector = __match_any_sync(active, address >> 5);
    const uint32_t sector_firsts = __ballot_sync(active, lane == static_cast<uint32_t>(__ffs(same_sector) - 1));
    // stride: each lane against the previous active lane, per lane between them
    const uint32_t below = active & ((1u << lane) - 1u);
    const int previous = below ? 31 - __clz(below) : static_cast<int>(lane);
    const uint64_t previous_address = __shfl_sync(active, address, previous);
    long long stride = 0;
    if (below) stride = (static_cast<long long>(address) - static_cast<long long>(previous_address)) /
                        (static_cast<int>(lane) - previous);
    const uint32_t second = active & ~(1u << leader);
    const int second_lane = second ? __ffs(second) - 1 : static_cast<int>(leader);
    const long long first_stride = __shfl_sync(active, stride, second_lane);
    const bool same = __all_sync(active, !below || stride == first_stride);
    const bool ascending = __all_sync(active, !below || address >= previous_address);
    if (lane != leader) return;
    const bool fits = first_stride >= -2147483647ll && first_stride <= 2147483647ll;
    TenprofAccessRecord& record = buffer->records[slot];
    record.pc = pc;
    record.address = address;
    record.bytes = access_size * static_cast<uint32_t>(__popc(active));
    record.flags_weight = (flags & 0xffu) | (weight << 8);
    record.lane_stride = fits ? static_cast<int32_t>(first_stride) : 0;
    record.sectors = static_cast<uint8_t>(__popc(sector_firsts));
    record.lanes = static_cast<uint8_t>(__popc(active));
    record.pattern = ((same && fits && second) ? TENPROF_SAME_STRIDE : 0u) | (ascending ? TENPROF_ASCENDING : 0u);
    record.pad = 0;
}

}  // namespace

// Loads, stores and atomics on global memory (each lane calls it with its own address).
extern "C" __device__ __noinline__ SanitizerPatchResult tenprof_on_global_access(
    void* userdata, uint64_t pc, void* ptr, uint32_t access_size, uint32_t flags, const void* data) {
    (void)data;
    auto* buffer = static_cast<TenprofAccessBuffer*>(userdata);
    if (buffer != nullptr) record_warp_access(buffer, pc, reinterpret_cast<uint64_t>(ptr), access_size, flags);
    return SANITIZER_PATCH_SUCCESS;
}

// cp.async: global -> shared copies (Ampere-style GEMM pipelines); counted as global reads.
extern "C" __device__ __noinline__ SanitizerPatchResult tenprof_on_memcpy_async(
    void* userdata, uint64_t pc, void* src, uint32_t dst, uint32_t access_size) {
    (void)dst;
    auto* buffer = static_cast<TenprofAccessBuffer*>(userdata);
    if (buffer != nullptr && src != nullptr) {
        record_warp_access(buffer, pc, reinterpret_cast<uint64_t>(src), access_size, SANITIZER_MEMORY_DEVICE_FLAG_READ);
    }
    return SANITIZER_PATCH_SUCCESS;
}

// cp.async.bulk global -> shared (one copy per warp; data bits 0:15 = 16-byte blocks).
extern "C" __device__ __noinline__ SanitizerPatchResult tenprof_on_bulk_copy(
    void* userdata, uint64_t pc, uint64_t src, uint32_t dst, uint32_t barrier, uint32_t data, uint32_t multicast) {
    (void)dst, (void)barrier, (void)multicast;
    auto* buffer = static_cast<TenprofAccessBuffer*>(userdata);
    if (buffer == nullptr || lane_id() != static_cast<uint32_t>(__ffs(__activemask()) - 1)) {
        return SANITIZER_PATCH_SUCCESS;
    }
    uint32_t weight = 0;
    const long long slot = claim(buffer, pc, &weight);
    if (slot < 0) return SANITIZER_PATCH_SUCCESS;
    const uint32_t bytes = (data & 0xffffu) * 16u;
    TenprofAccessRecord& record = buffer->records[slot];
    record.pc = pc;
    record.address = src;
    record.bytes = bytes;
    record.flags_weight = SANITIZER_MEMORY_DEVICE_FLAG_READ | (weight << 8);
    record.lane_stride = 0;
    record.sectors = static_cast<uint8_t>(bytes / 32u > 255u ? 255u : (bytes + 31u) / 32u);
    record.lanes = 1;
    record.pattern = TENPROF_BULK;
    record.pad = 0;
    return SANITIZER_PATCH_SUCCESS;
}

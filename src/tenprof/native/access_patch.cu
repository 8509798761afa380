// Device side of the access pass: compute-sanitizer patches called where a kernel reads or writes
// global memory (plain loads/stores/atomics, cp.async copies to shared memory, bulk copies).
//
// Per warp access only the first active lane works: it counts the access in its PC's slot and keeps a
// record for the first `first` accesses of the slot and then one in `every` (weighted by `every`), so
// small kernels are seen whole and big ones stay cheap. Records past the buffer's capacity are
// counted (as dropped weight), never written out of bounds.
#include <sanitizer_patching.h>

#include "access_format.h"

namespace {

__device__ __forceinline__ bool first_active_lane(uint32_t active) {
    uint32_t lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane == static_cast<uint32_t>(__ffs(active) - 1);
}

__device__ __forceinline__ void keep(TenprofAccessBuffer* buffer, uint64_t pc, uint64_t address, uint32_t bytes,
                                     uint32_t flags) {
    const uint32_t seen = atomicAdd(&buffer->pc_counts[(pc >> 4) & (TENPROF_PC_SLOTS - 1)], 1u);
    uint32_t weight = 1;
    if (seen >= buffer->first) {
        if ((seen - buffer->first) % buffer->every != 0) return;
        weight = buffer->every;
    }
    const unsigned long long slot = atomicAdd(&buffer->used, 1ull);
    if (slot >= buffer->capacity) {
        atomicAdd(&buffer->dropped_weight, static_cast<unsigned long long>(weight));
        return;
    }
    TenprofAccessRecord& record = buffer->records[slot];
    record.pc = pc;
    record.address = address;
    record.bytes = bytes;
    record.flags_weight = (flags & 0xffu) | (weight << 8);
}

}  // namespace

// Loads, stores and atomics on global memory (each lane calls it with its own address).
extern "C" __device__ __noinline__ SanitizerPatchResult tenprof_on_global_access(
    void* userdata, uint64_t pc, void* ptr, uint32_t access_size, uint32_t flags, const void* data) {
    (void)data;
    auto* buffer = static_cast<TenprofAccessBuffer*>(userdata);
    const uint32_t active = __activemask();
    if (buffer == nullptr || !first_active_lane(active)) return SANITIZER_PATCH_SUCCESS;
    keep(buffer, pc, reinterpret_cast<uint64_t>(ptr), access_size * static_cast<uint32_t>(__popc(active)), flags);
    return SANITIZER_PATCH_SUCCESS;
}

// cp.async: global -> shared copies (Ampere-style GEMM pipelines); counted as global reads.
extern "C" __device__ __noinline__ SanitizerPatchResult tenprof_on_memcpy_async(
    void* userdata, uint64_t pc, void* src, uint32_t dst, uint32_t access_size) {
    (void)dst;
    auto* buffer = static_cast<TenprofAccessBuffer*>(userdata);
    const uint32_t active = __activemask();
    if (buffer == nullptr || src == nullptr || !first_active_lane(active)) return SANITIZER_PATCH_SUCCESS;
    keep(buffer, pc, reinterpret_cast<uint64_t>(src), access_size * static_cast<uint32_t>(__popc(active)),
         SANITIZER_MEMORY_DEVICE_FLAG_READ);
    return SANITIZER_PATCH_SUCCESS;
}

// cp.async.bulk global -> shared (one copy per warp; data bits 0:15 = 16-byte blocks).
extern "C" __device__ __noinline__ SanitizerPatchResult tenprof_on_bulk_copy(
    void* userdata, uint64_t pc, uint64_t src, uint32_t dst, uint32_t barrier, uint32_t data, uint32_t multicast) {
    (void)dst, (void)barrier, (void)multicast;
    auto* buffer = static_cast<TenprofAccessBuffer*>(userdata);
    if (buffer == nullptr || !first_active_lane(__activemask())) return SANITIZER_PATCH_SUCCESS;
    keep(buffer, pc, src, (data & 0xffffu) * 16u, SANITIZER_MEMORY_DEVICE_FLAG_READ);
    return SANITIZER_PATCH_SUCCESS;
}

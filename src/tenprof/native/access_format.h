// The records the access pass's device patch writes and its host tool reads back, one layout for both.
#pragma once
#include <stdint.h>

#define TENPROF_PC_SLOTS 16384u  // 256 KiB of code before two instructions share a counter

// pattern bits of a record
#define TENPROF_SAME_STRIDE 0x1u  // every active lane is `lane_stride` bytes after the previous lane
#define TENPROF_BULK 0x2u         // one copy for the whole warp (cp.async.bulk): no lanes to compare
#define TENPROF_ASCENDING 0x4u    // no active lane's address is below the previous lane's (rows of a tile,
                                  // sorted indices), unlike a random gather

// One sampled warp-level global memory access: the first active lane's address; bytes cover the
// whole warp (access size x active lanes). flags_weight: low 8 bits the sanitizer's access flags
// (1 read, 2 write, 4 system atomic), the rest how many warp accesses this record stands for.
// sectors: distinct 32-byte sectors the active lanes touched; lane_stride: the address of the second
// active lane minus the first's, per lane between them (clamped to int32; meaningful with
// TENPROF_SAME_STRIDE).
struct TenprofAccessRecord {
    uint64_t pc;
    uint64_t address;
    uint32_t bytes;
    uint32_t flags_weight;
    int32_t lane_stride;
    uint8_t sectors;
    uint8_t lanes;
    uint8_t pattern;
    uint8_t pad;
};

// One launch's device buffer: reset from a host template before each launch.
struct TenprofAccessBuffer {
    unsigned long long used;            // records claimed (may exceed capacity)
    unsigned long long dropped_weight;  // warp accesses whose record did not fit
    uint32_t capacity;
    uint32_t first;                     // per PC slot: record every one of the first `first` accesses...
    uint32_t every;                     // ...then the accesses of one warp in `every`
    uint32_t pad;
    uint32_t pc_counts[TENPROF_PC_SLOTS];
    TenprofAccessRecord records[1];
};

#define TENPROF_BUFFER_HEADER_BYTES (sizeof(TenprofAccessBuffer) - sizeof(TenprofAccessRecord))

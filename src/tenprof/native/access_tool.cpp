// Host side of the access pass: a compute-sanitizer tool loaded into the profiled process by LD_PRELOAD.
//
// Contract (read by tenprof.importers.accesses_import):
// - Active only when TENPROF_ACCESS_DIR and TENPROF_ACCESS_PATCH are set; it then removes itself from
//   LD_PRELOAD so processes the script starts (compilers, workers) run without it.
// - Sets every module's global memory accesses to be patched with tenprof_on_global_access, cp.async and
//   bulk global->shared copies with their own callbacks (access_patch.cu), and instruments a module only
//   while its launches are recorded (patched before a recorded launch, unpatched before one that is not;
//   TENPROF_ACCESS_PATCH_ALL=1 instruments every module as it loads); gives each recorded launch a
//   freshly reset device buffer.
// - After each launch (which it waits for) appends one line to access-launches-<pid>.tsv:
//   launch id, op seq (-1 outside ops), last op seq started, ordinal in the op, records written,
//   records claimed, dropped weight, function start pc, grid, block, kernel (mangled) name; and the launch's records to
//   access-records-<pid>.bin: the 8 bytes "TPACCv2\n", then packed little-endian {u32 launch id, u32 pc
//   offset from the function start, u64 address, u32 bytes, u32 flags_weight, i32 lane stride, u8
//   sectors, u8 lanes, u8 pattern bits, u8 0} (access_format.h says what each holds; files without the
//   header hold the first six fields only). Problems go to access-log-<pid>.txt.
// - tenprof_access_set_op(seq, inside, record) (called from Python with inside=1 before each op and
//   inside=0 after it) tags the launches that follow; the ordinal counts launches since the op started.
//   record=0 (an op like one recorded before: same op, line and input layouts) lets its launches run
//   without a buffer and, where its module can be unpatched, without the patches: neither waited for
//   nor written.
#include <sanitizer.h>

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "access_format.h"

namespace {

struct ContextBuffers {
    bool patches_loaded = false;
    bool failed = false;
    TenprofAccessBuffer* device = nullptr;
    TenprofAccessBuffer* header_template = nullptr;  // pinned host memory
    TenprofAccessRecord* staging = nullptr;          // pinned host memory
};

struct PendingLaunch {
    bool active = false;
    CUcontext context = nullptr;
    CUmodule module = nullptr;
    std::string name;
    int64_t op = -1;
    int64_t last_op = -1;
    uint32_t ordinal = 0;
    uint32_t grid[3] = {0, 0, 0};
    uint32_t block[3] = {0, 0, 0};
    Sanitizer_StreamHandle stream = nullptr;
};

struct FileRecord {
    uint32_t launch;
    uint32_t pc_offset;
    uint64_t address;
    uint32_t bytes;
    uint32_t flags_weight;
    int32_t lane_stride;
    uint8_t sectors;
    uint8_t lanes;
    uint8_t pattern;
    uint8_t pad;
};
static_assert(sizeof(FileRecord) == 32, "record layout is part of the file format");
constexpr char kRecordsHeader[8] = {'T', 'P', 'A', 'C', 'C', 'v', '2', '\n'};

struct Tool {
    std::recursive_mutex lock;
    Sanitizer_SubscriberHandle subscriber = nullptr;
    std::string patch_path;
    std::string dir;
    uint32_t capacity = 1u << 20;
    uint32_t first = 32;
    uint32_t every = 64;
    bool async_failed = false;  // a patch kind this sanitizer refused once is not asked for again
    bool bulk_failed = false;
    bool unrecorded_failed = false;  // setting no buffer for a launch failed once (said once in the log)
    // TENPROF_ACCESS_DIAGNOSE, for benchmarks/ (where a step's time goes): "nopatch" leaves every module
    // unpatched (the sanitizer's callbacks alone), "norecord" patches but gives no launch a buffer
    bool diagnose_nopatch = false;
    bool diagnose_norecord = false;
    // Modules are instrumented only while their launches are recorded: patched before a launch that
    // records, unpatched before one that does not (an op like one recorded already), so that the
    // launches not recorded run the kernels' own code. TENPROF_ACCESS_PATCH_ALL=1 patches every module
    // when it loads, as before.
    bool patch_all = false;
    std::unordered_set<CUmodule> patched;
    std::unordered_set<CUmodule> patchable;  // modules whose instrumentation points are set
    std::unordered_set<CUmodule> unpatched_once;  // their points must be set again before a patch
    bool toggle_failed = false;
    std::unordered_map<CUcontext, ContextBuffers> contexts;
    std::atomic<int64_t> op{-1};       // the op running now, -1 outside ops
    std::atomic<int64_t> last_op{-1};  // the last op that started
    std::atomic<int32_t> record{1};    // whether the running op's launches are recorded
    int64_t ordinal_op = -2;
    uint32_t ordinal = 0;
    uint32_t next_launch = 0;
    FILE* launches = nullptr;
    FILE* records = nullptr;
    FILE* log = nullptr;
    std::vector<FileRecord> out;
    PendingLaunch pending;
};

Tool* g_tool = nullptr;

void note(const char* what, SanitizerResult result) {
    if (g_tool == nullptr || g_tool->log == nullptr) return;
    const char* text = nullptr;
    sanitizerGetResultString(result, &text);
    std::fprintf(g_tool->log, "%s failed: %s (%d)\n", what, text ? text : "?", static_cast<int>(result));
    std::fflush(g_tool->log);
}

bool ok(SanitizerResult result, const char* what) {
    if (result == SANITIZER_SUCCESS) return true;
    note(what, result);
    return false;
}

FILE* open_output(const char* stem, const char* suffix, const char* mode) {
    const std::string path = g_tool->dir + "/" + stem + "-" + std::to_string(getpid()) + suffix;
    return std::fopen(path.c_str(), mode);
}

ContextBuffers* buffers_for(CUcontext context) {
    ContextBuffers& buffers = g_tool->contexts[context];
    if (buffers.failed) return nullptr;
    if (buffers.device != nullptr) return &buffers;
    const size_t bytes = TENPROF_BUFFER_HEADER_BYTES + sizeof(TenprofAccessRecord) * size_t(g_tool->capacity);
    void* device = nullptr;
    void* header = nullptr;
    void* staging = nullptr;
    if (!ok(sanitizerAlloc(context, &device, bytes), "sanitizerAlloc(access buffer)") ||
        !ok(sanitizerAllocHost(context, &header, TENPROF_BUFFER_HEADER_BYTES), "sanitizerAllocHost(header)") ||
        !ok(sanitizerAllocHost(context, &staging, sizeof(TenprofAccessRecord) * size_t(g_tool->capacity)),
            "sanitizerAllocHost(staging)")) {
        buffers.failed = true;
        return nullptr;
    }
    std::memset(header, 0, TENPROF_BUFFER_HEADER_BYTES);
    auto* h = static_cast<TenprofAccessBuffer*>(header);
    h->capacity = g_tool->capacity;
    h->first = g_tool->first;
    h->every = g_tool->every;
    buffers.device = static_cast<TenprofAccessBuffer*>(device);
    buffers.header_template = h;
    buffers.staging = static_cast<TenprofAccessRecord*>(staging);
    return &buffers;
}

// The instructions of `module` to patch and their callbacks: plain global accesses are required; the
// asynchronous copies are patched where this sanitizer knows them (a failure there is logged and the
// rest still records). Set again before each re-patch: unpatching a module clears them.
bool set_points(CUmodule module) {
    if (!ok(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, module, "tenprof_on_global_access"),
            "sanitizerPatchInstructions(global)")) {
        return false;
    }
    if (!g_tool->async_failed &&
        !ok(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_MEMCPY_ASYNC, module, "tenprof_on_memcpy_async"),
            "sanitizerPatchInstructions(memcpy async)")) {
        g_tool->async_failed = true;
    }
    if (!g_tool->bulk_failed &&
        !ok(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_BULK_COPY_GLOBAL_TO_SHARED, module, "tenprof_on_bulk_copy"),
            "sanitizerPatchInstructions(bulk copy)")) {
        g_tool->bulk_failed = true;
    }
    return true;
}

void on_module_loaded(const Sanitizer_ResourceModuleData* data) {
    std::lock_guard<std::recursive_mutex> guard(g_tool->lock);
    ContextBuffers& buffers = g_tool->contexts[data->context];
    if (!buffers.patches_loaded) {
        if (!ok(sanitizerAddPatchesFromFile(g_tool->patch_path.c_str(), data->context), "sanitizerAddPatchesFromFile")) {
            buffers.failed = true;
            return;
        }
        buffers.patches_loaded = true;
    }
    if (buffers.failed || g_tool->diagnose_nopatch || !set_points(data->module)) return;
    g_tool->patchable.insert(data->module);
    if (g_tool->patch_all && ok(sanitizerPatchModule(data->module), "sanitizerPatchModule")) {
        g_tool->patched.insert(data->module);
    }
}

// Instrument `module` (or take its instrumentation off) before a launch from it; a failure is logged
// once and leaves the module as it was.
void set_patched(CUmodule module, bool on) {
    if (g_tool->patch_all || g_tool->patchable.count(module) == 0) return;
    const bool now = g_tool->patched.count(module) != 0;
    if (now == on) return;
    if (on && g_tool->unpatched_once.count(module) != 0) set_points(module);
    const SanitizerResult done = on ? sanitizerPatchModule(module) : sanitizerUnpatchModule(module);
    if (done != SANITIZER_SUCCESS) {
        if (!g_tool->toggle_failed) note(on ? "sanitizerPatchModule" : "sanitizerUnpatchModule", done);
        g_tool->toggle_failed = true;
        return;
    }
    if (on) {
        g_tool->patched.insert(module);
    } else {
        g_tool->patched.erase(module);
        g_tool->unpatched_once.insert(module);
    }
}

void on_launch_begin(const Sanitizer_LaunchData* data) {
    g_tool->lock.lock();  // held until this launch's end callback, on this thread
    PendingLaunch& p = g_tool->pending;
    p = PendingLaunch();
    ContextBuffers* buffers = buffers_for(data->context);
    if (buffers == nullptr) return;
    const int64_t op = g_tool->op.load();
    if (op != g_tool->ordinal_op) {
        g_tool->ordinal_op = op;
        g_tool->ordinal = 0;
    }
    if ((op >= 0 && !g_tool->record.load()) || g_tool->diagnose_norecord) {
        // an op like one recorded already: no buffer, so the patches return at once; not waited for;
        // and its module's own code, where it can be unpatched
        set_patched(data->module, g_tool->diagnose_norecord);
        const SanitizerResult done = sanitizerSetLaunchCallbackData(data->hLaunch, data->function, data->hStream, nullptr);
        if (done != SANITIZER_SUCCESS && !g_tool->unrecorded_failed) {
            g_tool->unrecorded_failed = true;
            note("sanitizerSetLaunchCallbackData(none)", done);
        }
        g_tool->ordinal++;
        return;
    }
    set_patched(data->module, true);
    p.active = true;
    p.context = data->context;
    p.module = data->module;
    p.name = data->functionName ? data->functionName : "";
    p.op = op;
    p.last_op = g_tool->last_op.load();
    p.ordinal = g_tool->ordinal++;
    p.grid[0] = data->gridDim_x, p.grid[1] = data->gridDim_y, p.grid[2] = data->gridDim_z;
    p.block[0] = data->blockDim_x, p.block[1] = data->blockDim_y, p.block[2] = data->blockDim_z;
    p.stream = data->hStream;
    if (!ok(sanitizerMemcpyHostToDeviceAsync(buffers->device, buffers->header_template, TENPROF_BUFFER_HEADER_BYTES,
                                             data->hStream),
            "sanitizerMemcpyHostToDeviceAsync(header)") ||
        !ok(sanitizerSetLaunchCallbackData(data->hLaunch, data->function, data->hStream, buffers->device),
            "sanitizerSetLaunchCallbackData")) {
        p.active = false;
    }
}

void on_launch_end() {
    PendingLaunch& p = g_tool->pending;
    if (p.active) {
        ContextBuffers& buffers = g_tool->contexts[p.context];
        // The first two counters of the buffer (used, dropped_weight), through pinned memory as the
        // sanitizer requires inside launch callbacks.
        unsigned long long counts[2] = {0, 0};
        const bool copied = ok(sanitizerStreamSynchronize(p.stream), "sanitizerStreamSynchronize") &&
                            ok(sanitizerMemcpyDeviceToHost(buffers.staging, buffers.device, sizeof(counts), p.stream),
                               "sanitizerMemcpyDeviceToHost(counts)");
        if (copied) {
            std::memcpy(counts, buffers.staging, sizeof(counts));
            const uint64_t written = counts[0] < g_tool->capacity ? counts[0] : g_tool->capacity;
            uint64_t function_pc = 0, function_size = 0;
            // Without the start, offsets would be absolute PCs and match nothing: say so in the log.
            ok(sanitizerGetFunctionPcAndSize(p.module, p.name.c_str(), &function_pc, &function_size),
               "sanitizerGetFunctionPcAndSize");
            const uint32_t launch = g_tool->next_launch++;
            if (written > 0 && ok(sanitizerMemcpyDeviceToHost(buffers.staging, buffers.device->records,
                                                              sizeof(TenprofAccessRecord) * written, p.stream),
                                  "sanitizerMemcpyDeviceToHost(records)")) {
                g_tool->out.resize(written);
                for (uint64_t i = 0; i < written; ++i) {
                    const TenprofAccessRecord& r = buffers.staging[i];
                    g_tool->out[i] = FileRecord{launch,         static_cast<uint32_t>(r.pc - function_pc),
                                                r.address,      r.bytes,
                                                r.flags_weight, r.lane_stride,
                                                r.sectors,      r.lanes,
                                                r.pattern,      0};
                }
                std::fwrite(g_tool->out.data(), sizeof(FileRecord), written, g_tool->records);
            }
            std::fprintf(g_tool->launches, "%u\t%lld\t%lld\t%u\t%llu\t%llu\t%llu\t%llu\t%u,%u,%u\t%u,%u,%u\t%s\n", launch,
                         static_cast<long long>(p.op), static_cast<long long>(p.last_op), p.ordinal, static_cast<unsigned long long>(written),
                         counts[0], counts[1], static_cast<unsigned long long>(function_pc), p.grid[0],
                         p.grid[1], p.grid[2], p.block[0], p.block[1], p.block[2], p.name.c_str());
        }
    }
    p.active = false;
    g_tool->lock.unlock();
}

void SANITIZERAPI on_callback(void*, Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* data) {
    if (domain == SANITIZER_CB_DOMAIN_RESOURCE && cbid == SANITIZER_CBID_RESOURCE_MODULE_LOADED) {
        on_module_loaded(static_cast<const Sanitizer_ResourceModuleData*>(data));
    } else if (domain == SANITIZER_CB_DOMAIN_LAUNCH && cbid == SANITIZER_CBID_LAUNCH_BEGIN) {
        on_launch_begin(static_cast<const Sanitizer_LaunchData*>(data));
    } else if (domain == SANITIZER_CB_DOMAIN_LAUNCH && cbid == SANITIZER_CBID_LAUNCH_END) {
        on_launch_end();
    }
}

uint32_t env_number(const char* name, uint32_t fallback) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    const unsigned long value = std::strtoul(text, nullptr, 10);
    return value > 0 ? static_cast<uint32_t>(value) : fallback;
}

// Children of the profiled process inherit LD_PRELOAD: take this library out of it.
void leave_ld_preload() {
    const char* preload = std::getenv("LD_PRELOAD");
    if (preload == nullptr) return;
    std::string kept;
    std::string item;
    const std::string all = preload;
    size_t start = 0;
    while (start <= all.size()) {
        size_t end = all.find_first_of(": ", start);
        if (end == std::string::npos) end = all.size();
        item = all.substr(start, end - start);
        if (!item.empty() && item.find("libtenprof_access") == std::string::npos) kept += (kept.empty() ? "" : ":") + item;
        start = end + 1;
    }
    if (kept.empty()) unsetenv("LD_PRELOAD");
    else setenv("LD_PRELOAD", kept.c_str(), 1);
}

__attribute__((constructor)) void start_tool() {
    const char* dir = std::getenv("TENPROF_ACCESS_DIR");
    const char* patch = std::getenv("TENPROF_ACCESS_PATCH");
    leave_ld_preload();
    if (dir == nullptr || patch == nullptr) return;
    g_tool = new Tool();
    g_tool->dir = dir;
    g_tool->patch_path = patch;
    g_tool->capacity = env_number("TENPROF_ACCESS_CAPACITY", g_tool->capacity);
    g_tool->first = env_number("TENPROF_ACCESS_FIRST", g_tool->first);
    g_tool->every = env_number("TENPROF_ACCESS_EVERY", g_tool->every);
    const char* all = std::getenv("TENPROF_ACCESS_PATCH_ALL");
    g_tool->patch_all = all != nullptr && std::strcmp(all, "1") == 0;
    if (const char* mode = std::getenv("TENPROF_ACCESS_DIAGNOSE")) {
        g_tool->diagnose_nopatch = std::strcmp(mode, "nopatch") == 0;
        g_tool->diagnose_norecord = std::strcmp(mode, "norecord") == 0;
    }
    // The other variables are read once here: the script's children must not record.
    unsetenv("TENPROF_ACCESS_DIR");
    g_tool->log = open_output("access-log", ".txt", "w");
    g_tool->launches = open_output("access-launches", ".tsv", "w");
    g_tool->records = open_output("access-records", ".bin", "wb");
    if (g_tool->log == nullptr || g_tool->launches == nullptr || g_tool->records == nullptr) return;
    std::fwrite(kRecordsHeader, 1, sizeof(kRecordsHeader), g_tool->records);
    if (!ok(sanitizerSubscribe(&g_tool->subscriber, on_callback, nullptr), "sanitizerSubscribe") ||
        !ok(sanitizerEnableDomain(1, g_tool->subscriber, SANITIZER_CB_DOMAIN_RESOURCE), "sanitizerEnableDomain(resource)") ||
        !ok(sanitizerEnableDomain(1, g_tool->subscriber, SANITIZER_CB_DOMAIN_LAUNCH), "sanitizerEnableDomain(launch)")) {
        g_tool->subscriber = nullptr;
    }
}

}  // namespace

extern "C" {

// 1 when the tool is recording in this process.
int tenprof_access_active() { return g_tool != nullptr && g_tool->subscriber != nullptr ? 1 : 0; }

void tenprof_access_set_op(int64_t seq, int32_t inside, int32_t record) {
    if (g_tool == nullptr) return;
    if (inside) g_tool->last_op.store(seq);
    g_tool->record.store(inside ? record : 1);
    g_tool->op.store(inside ? seq : -1);
}

void tenprof_access_flush() {
    if (g_tool == nullptr) return;
    std::lock_guard<std::recursive_mutex> guard(g_tool->lock);
    for (FILE* f : {g_tool->launches, g_tool->records, g_tool->log}) {
        if (f != nullptr) std::fflush(f);
    }
}

}  // extern "C"

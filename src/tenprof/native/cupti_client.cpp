// tenprof's own CUPTI activity client: kernels, copies, memsets and the CUDA runtime and driver calls,
// with their correlation ids, on the perf clock; nothing else (no CPU-side profiler, no callbacks of its
// own beyond CUPTI's buffer hand-over).
//
// Contract (capture/cupti_client.py drives it; plain C ABI, no Python, no torch):
// - tenprof_cupti_open(path) loads libcupti (the one already in the process, else `path`) and checks that
//   its version is the one these headers describe; tenprof_cupti_error() says why it failed.
// - tenprof_cupti_enable(1|0) turns the activity kinds on or off (off between recorded windows: nothing is
//   recorded then, and CUPTI's per-call work stops). Timestamps come from CLOCK_MONOTONIC, which is
//   Python's perf_counter_ns on Linux, so records need no clock alignment.
// - tenprof_cupti_flush() hands every finished record over (after the GPU drained);
//   tenprof_cupti_drain() decodes the handed-over buffers into fixed-size `Record`s (read with
//   tenprof_cupti_records) and a table of names ('\0'-separated, tenprof_cupti_names), freeing the buffers.
// - tenprof_cupti_close() disables, flushes and finalizes CUPTI, so a profiler started later (the script's
//   own torch.profiler) finds it free; a later tenprof_cupti_enable(1) attaches it again (a detach between
//   recorded windows: CUPTI attached with nothing enabled still slows the program's CUDA calls).
// Buffers are kept undecoded while recording: CUPTI's thread only appends them to a list.
// The CUDA calls are recorded one of two ways (tenprof_cupti_api_mode, before the first enable):
// - kApiRecords: CUPTI's runtime and driver activity records, every call (as Kineto records them);
// - kApiCallbacks: CUPTI's callback API, subscribed to the calls the analyses read alone (launches, copies,
//   memsets, synchronizations, allocations, graph and module loads; chosen by name, `wanted_call`), each
//   call timed at its entry and exit here and kept in its thread's list: the calls torch makes around every
//   op (cudaGetDevice, cudaGetLastError, ...) are then not intercepted at all;
// - kApiNone: no calls (kernels, copies and memsets alone: for measuring what the calls cost).

#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <time.h>

#include <pthread.h>

#include <atomic>
#include <memory>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

// One decoded activity record; `kind` is CUPTI's activity kind. Layout mirrored in cupti_client.py.
struct Record {
  int32_t kind;
  int32_t name;         // index into the name table
  uint64_t start;       // ns, CLOCK_MONOTONIC
  uint64_t end;
  int32_t device;       // kernels, copies, memsets
  int32_t stream;
  uint32_t correlation;
  uint32_t thread;      // API calls: CUPTI's thread id (pthread_self()'s low 32 bits)
  int32_t grid[3];
  int32_t block[3];
  int32_t registers;
  int32_t shared_memory;  // static + dynamic, bytes
  int64_t bytes;          // copies and memsets
  int32_t cbid;           // API calls
  int32_t context;
};

constexpr size_t kBufferSize = 8u << 20;
constexpr size_t kAlign = 8;

#define TP_CUPTI_FUNCTIONS(X)            \
  X(cuptiGetVersion)                     \
  X(cuptiActivityEnable)                 \
  X(cuptiActivityDisable)                \
  X(cuptiActivityRegisterCallbacks)      \
  X(cuptiActivityRegisterTimestampCallback) \
  X(cuptiActivityFlushAll)               \
  X(cuptiActivityGetNextRecord)          \
  X(cuptiGetCallbackName)                \
  X(cuptiGetResultString)                \
  X(cuptiFinalize)

#define TP_DECLARE(name) decltype(&::name) p_##name = nullptr;
TP_CUPTI_FUNCTIONS(TP_DECLARE)

#define TP_CUPTI_CALLBACK_FUNCTIONS(X) \
  X(cuptiSubscribe)                     \
  X(cuptiUnsubscribe)                   \
  X(cuptiEnableCallback)

TP_CUPTI_CALLBACK_FUNCTIONS(TP_DECLARE)

const CUpti_ActivityKind kGpuKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
};
const CUpti_ActivityKind kApiKinds[] = {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};

enum ApiMode { kApiRecords = 0, kApiCallbacks = 1, kApiNone = 2 };
int g_api_mode = kApiRecords;

// A CUDA call seen by the callback API, timed here.
struct ApiCall {
  uint64_t start;
  uint64_t end;
  uint32_t correlation;
  uint32_t thread;
  int32_t cbid;
  int32_t domain;
};

// One thread's calls; its own lock is taken by that thread per call (never contended but at a drain).
struct ThreadCalls {
  std::mutex mutex;
  std::vector<ApiCall> calls;
};
std::mutex g_threads_mutex;
std::vector<std::shared_ptr<ThreadCalls>> g_threads;
thread_local std::shared_ptr<ThreadCalls> t_calls;

CUpti_SubscriberHandle g_subscriber = nullptr;
std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> g_wanted;  // the calls subscribed to
// The launch digest (TENPROF_OPS=sampled: capture/op_copy.py copies a step's ops from a recorded step that
// launched the same work): an order-free sum over the calls that launch GPU work (launches, copies, sets)
// of their call and, for a kernel launch, its kernel's name, since the last tenprof_cupti_launch_digest().
// Which calls count, by domain and cbid: kKernelLaunch (whose callback data names the kernel: CUPTI's
// symbolName is valid for kernel launches alone, so it is read for nothing else), or kCopyOrSet (other
// work, by the call alone).
enum Launching : uint8_t { kNotLaunching = 0, kCopyOrSet = 1, kKernelLaunch = 2 };
std::vector<uint8_t> g_launching[2];
std::atomic<uint64_t> g_launch_digest{0};

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

// A kernel name's hash, cached by the name's address per thread (CUPTI hands the same string for the same
// kernel; a stale entry where it did not would only make two steps' digests alike, and the copy compares
// the launches themselves).
uint64_t name_hash(const char* name) {
  if (name == nullptr) return 0;
  thread_local std::unordered_map<const char*, uint64_t> cache;
  auto found = cache.find(name);
  if (found != cache.end()) return found->second;
  uint64_t h = 1469598103934665603ULL;
  for (const char* c = name; *c != '\0'; ++c) h = (h ^ uint8_t(*c)) * 1099511628211ULL;
  cache.emplace(name, h);
  return h;
}

std::string g_error;
void* g_library = nullptr;
bool g_registered = false;
bool g_enabled = false;
std::mutex g_mutex;
std::vector<std::pair<uint8_t*, size_t>> g_completed;  // handed over by CUPTI, not yet decoded
std::vector<Record> g_records;
std::string g_names;  // '\0'-separated
std::unordered_map<std::string, int32_t> g_name_ids;

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

ThreadCalls& this_threads_calls() {
  if (!t_calls) {
    t_calls = std::make_shared<ThreadCalls>();
    std::lock_guard<std::mutex> lock(g_threads_mutex);
    g_threads.push_back(t_calls);
  }
  return *t_calls;
}

void CUPTIAPI on_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  auto* call = static_cast<const CUpti_CallbackData*>(data);
  if (call->callbackSite == CUPTI_API_ENTER) {
    *call->correlationData = monotonic_ns();  // CUPTI's per-call scratch, handed back at the exit
    return;
  }
  ApiCall c{*call->correlationData, monotonic_ns(), call->correlationId,
            uint32_t(uint64_t(pthread_self()) & 0xFFFFFFFFu), int32_t(cbid), int32_t(domain)};
  const std::vector<uint8_t>& launching = g_launching[domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1 : 0];
  uint8_t what = cbid < launching.size() ? launching[cbid] : uint8_t(kNotLaunching);
  if (what != kNotLaunching) {
    uint64_t name = what == kKernelLaunch ? name_hash(call->symbolName) : 0;
    uint64_t key = mix(mix(uint64_t(domain), uint64_t(cbid)), name);
    g_launch_digest.fetch_add(mix(key, 0x5bd1e995ULL), std::memory_order_relaxed);
  }
  ThreadCalls& mine = this_threads_calls();
  std::lock_guard<std::mutex> lock(mine.mutex);
  mine.calls.push_back(c);
}

// The calls the analyses read: launches, copies, memsets, synchronizations, allocations, graphs, modules,
// and the event calls that hand the GPU work (analyses/timeline/step_time.py's _WORK_WORDS). Not the
// polling ones (cudaEventQuery, cudaStreamQuery: a NCCL watchdog calls them all the time) nor the queries
// torch makes around every op (cudaGetDevice, cudaGetLastError, ...).
bool wanted_call(const std::string& name) {
  static const char* kParts[] = {"Launch", "Memcpy", "Memset", "Synchronize", "Malloc", "Alloc", "Free",
                                 "MemCreate", "MemMap", "MemUnmap", "MemRelease", "ModuleLoad", "LibraryLoad",
                                 "GraphInstantiate", "StreamWaitEvent", "EventRecord"};
  for (const char* part : kParts) {
    if (name.find(part) != std::string::npos) return true;
  }
  return false;
}

// Whether a call launches GPU work, which the launch digest counts: a kernel (cudaLaunchKernel,
// cuLaunchKernelEx, the cooperative ones: their callback data names it), or other work counted by the call
// alone (copies, sets, graph launches, host functions).
uint8_t launching_call(const std::string& name) {
  if (name.find("LaunchKernel") != std::string::npos || name.find("LaunchCooperativeKernel") != std::string::npos)
    return kKernelLaunch;
  bool other = name.find("Launch") != std::string::npos || name.find("Memcpy") != std::string::npos ||
               name.find("Memset") != std::string::npos;
  return other ? kCopyOrSet : kNotLaunching;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferSize));
  *size = *buffer ? kBufferSize : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_completed.emplace_back(buffer, valid);
}

bool failed(CUptiResult result, const char* what) {
  if (result == CUPTI_SUCCESS) return false;
  const char* text = nullptr;
  if (p_cuptiGetResultString) p_cuptiGetResultString(result, &text);
  g_error = std::string(what) + " failed: " + (text ? text : std::to_string(int(result)));
  return true;
}

int32_t name_id(const std::string& name) {
  auto found = g_name_ids.find(name);
  if (found != g_name_ids.end()) return found->second;
  int32_t id = int32_t(g_name_ids.size());
  g_name_ids.emplace(name, id);
  g_names += name;
  g_names.push_back('\0');
  return id;
}

std::string demangled(const char* name) {
  if (name == nullptr) return "";
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || text == nullptr) return name;
  std::string out(text);
  std::free(text);
  return out;
}

// As Kineto writes a call's name: CUPTI's callback name without its "_vNNNN" version suffix.
std::string api_name(CUpti_ActivityKind kind, uint32_t cbid) {
  const char* name = nullptr;
  CUpti_CallbackDomain domain =
      kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  if (p_cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) {
    return (kind == CUPTI_ACTIVITY_KIND_RUNTIME ? "cudaRuntimeCall#" : "cuDriverCall#") + std::to_string(cbid);
  }
  std::string text(name);
  size_t v = text.rfind("_v");
  if (v != std::string::npos && v + 2 < text.size() &&
      text.find_first_not_of("0123456789", v + 2) == std::string::npos) {
    text.resize(v);
  }
  return text;
}

const char* copy_kind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "Unknown";
  }
}

const char* memory_kind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "Managed Static";
    default: return "Unknown";
  }
}

// The record types of this CUPTI (the build passes the newest versions its headers declare).
#ifndef TP_KERNEL_RECORD
#error "TP_KERNEL_RECORD (the newest CUpti_ActivityKernelN of the headers) must be defined"
#endif
#ifndef TP_MEMCPY_RECORD
#error "TP_MEMCPY_RECORD must be defined"
#endif
#ifndef TP_MEMSET_RECORD
#error "TP_MEMSET_RECORD must be defined"
#endif

// The fields every record of GPU work has (a kernel, a copy, a memset).
template <typename T>
void place_on_gpu(Record& r, const T* work) {
  r.start = work->start;
  r.end = work->end;
  r.device = int32_t(work->deviceId);
  r.context = int32_t(work->contextId);
  r.stream = int32_t(work->streamId);
  r.correlation = work->correlationId;
}

void decode(const CUpti_Activity* activity) {
  Record r{};
  r.kind = int32_t(activity->kind);
  switch (activity->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* k = reinterpret_cast<const TP_KERNEL_RECORD*>(activity);
      r.name = name_id(demangled(k->name));
      place_on_gpu(r, k);
      r.grid[0] = k->gridX, r.grid[1] = k->gridY, r.grid[2] = k->gridZ;
      r.block[0] = k->blockX, r.block[1] = k->blockY, r.block[2] = k->blockZ;
      r.registers = int32_t(k->registersPerThread);
      r.shared_memory = int32_t(k->staticSharedMemory) + int32_t(k->dynamicSharedMemory);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* c = reinterpret_cast<const TP_MEMCPY_RECORD*>(activity);
      std::string name = std::string("Memcpy ") + copy_kind(c->copyKind) + " (" + memory_kind(c->srcKind) +
                         " -> " + memory_kind(c->dstKind) + ")";
      r.name = name_id(name);
      place_on_gpu(r, c);
      r.bytes = int64_t(c->bytes);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = reinterpret_cast<const TP_MEMSET_RECORD*>(activity);
      r.name = name_id(std::string("Memset (") + memory_kind(uint8_t(m->memoryKind)) + ")");
      place_on_gpu(r, m);
      r.bytes = int64_t(m->bytes);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(activity);
      r.name = name_id(api_name(activity->kind, a->cbid));
      r.start = a->start;
      r.end = a->end;
      r.device = -1;
      r.stream = -1;
      r.correlation = a->correlationId;
      r.thread = a->threadId;
      r.cbid = int32_t(a->cbid);
      break;
    }
    default:
      return;  // a kind not asked for
  }
  g_records.push_back(r);
}

// A call the callback API saw, as the activity record of it would read.
void decode_call(const ApiCall& c) {
  static std::unordered_map<int64_t, std::string> call_names;  // (domain, cbid) -> name
  CUpti_ActivityKind kind =
      c.domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
  int64_t key = (int64_t(c.domain) << 32) | uint32_t(c.cbid);
  auto found = call_names.find(key);
  if (found == call_names.end()) found = call_names.emplace(key, api_name(kind, uint32_t(c.cbid))).first;
  Record r{};
  r.kind = int32_t(kind);
  r.name = name_id(found->second);
  r.start = c.start;
  r.end = c.end;
  r.device = -1;
  r.stream = -1;
  r.correlation = c.correlation;
  r.thread = c.thread;
  r.cbid = c.cbid;
  g_records.push_back(r);
}

// Subscribe to the wanted calls' callbacks (left disabled). 0 on success.
int subscribe() {
  if (g_subscriber != nullptr) return 0;
  if (!p_cuptiSubscribe || !p_cuptiEnableCallback) {
    g_error = "libcupti has no callback API";
    return -1;
  }
  if (failed(p_cuptiSubscribe(&g_subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_call), nullptr),
             "cuptiSubscribe (is another CUPTI client, such as torch.profiler, attached?)")) {
    g_subscriber = nullptr;
    return -1;
  }
  g_wanted.clear();
  g_launching[0].assign(CUPTI_RUNTIME_TRACE_CBID_SIZE, kNotLaunching);
  g_launching[1].assign(CUPTI_DRIVER_TRACE_CBID_SIZE, kNotLaunching);
  const std::pair<CUpti_CallbackDomain, CUpti_ActivityKind> domains[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_ACTIVITY_KIND_RUNTIME}, {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_ACTIVITY_KIND_DRIVER}};
  for (auto [domain, kind] : domains) {
    uint32_t size = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? uint32_t(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                                                          : uint32_t(CUPTI_DRIVER_TRACE_CBID_SIZE);
    for (uint32_t cbid = 1; cbid < size; ++cbid) {
      const char* name = nullptr;
      if (p_cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
      if (wanted_call(name)) g_wanted.emplace_back(domain, cbid);
      g_launching[domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1 : 0][cbid] = launching_call(name);
    }
  }
  return 0;
}

// Activity kinds on or off. 0 on success.
template <size_t N>
int set_kinds(const CUpti_ActivityKind (&kinds)[N], int on) {
  for (CUpti_ActivityKind kind : kinds) {
    if (!on) {
      p_cuptiActivityDisable(kind);
    } else if (failed(p_cuptiActivityEnable(kind), "cuptiActivityEnable")) {
      return -1;
    }
  }
  return 0;
}

}  // namespace

extern "C" {

const char* tenprof_cupti_error() { return g_error.c_str(); }

// Load libcupti and check its version against the headers'. 0 on success.
int tenprof_cupti_open(const char* path) {
  if (g_library != nullptr) return 0;
  const char* loaded[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  for (const char* name : loaded) {
    g_library = dlopen(name, RTLD_NOW | RTLD_NOLOAD);  // the process's own (torch's) libcupti first
    if (g_library) break;
  }
  if (!g_library && path && *path) g_library = dlopen(path, RTLD_NOW);
  if (!g_library) {
    g_error = std::string("libcupti could not be loaded (") + (path && *path ? path : "none found") + ")";
    return -1;
  }
#define TP_RESOLVE(name)                                                        \
  p_##name = reinterpret_cast<decltype(&::name)>(dlsym(g_library, #name));      \
  if (!p_##name) {                                                              \
    g_error = "libcupti has no " #name;                                         \
    return -1;                                                                  \
  }
  TP_CUPTI_FUNCTIONS(TP_RESOLVE)
  TP_CUPTI_CALLBACK_FUNCTIONS(TP_RESOLVE)
  uint32_t version = 0;
  if (failed(p_cuptiGetVersion(&version), "cuptiGetVersion")) return -1;
  if (version != CUPTI_API_VERSION) {
    g_error = "libcupti's API version " + std::to_string(version) + " is not its headers' " +
              std::to_string(CUPTI_API_VERSION);
    return -2;
  }
  return 0;
}

uint32_t tenprof_cupti_version() {
  uint32_t version = 0;
  if (p_cuptiGetVersion) p_cuptiGetVersion(&version);
  return version;
}

// How CUDA calls are recorded (ApiMode); before the first enable.
void tenprof_cupti_api_mode(int mode) { g_api_mode = mode; }

int tenprof_cupti_api_calls_subscribed() { return int(g_wanted.size()); }

// Turn the records on (1) or off (0). 0 on success.
int tenprof_cupti_enable(int on) {
  if (!p_cuptiActivityEnable) {
    g_error = "libcupti is not open";
    return -1;
  }
  if (!g_registered) {
    if (failed(p_cuptiActivityRegisterTimestampCallback(monotonic_ns), "cuptiActivityRegisterTimestampCallback"))
      return -1;
    if (failed(p_cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks"))
      return -1;
    g_registered = true;
  }
  if (bool(on) == g_enabled) return 0;
  if (g_api_mode == kApiCallbacks && subscribe() != 0) return -1;
  if (set_kinds(kGpuKinds, on) != 0) return -1;
  if (g_api_mode == kApiRecords) {
    if (set_kinds(kApiKinds, on) != 0) return -1;
  } else if (g_api_mode == kApiCallbacks) {
    for (auto [domain, cbid] : g_wanted) p_cuptiEnableCallback(uint32_t(on), g_subscriber, domain, cbid);
  }
  g_enabled = bool(on);
  return 0;
}

// The launch digest since the last call (0: none launched, or the calls are not seen by callbacks), reset.
uint64_t tenprof_cupti_launch_digest() { return g_launch_digest.exchange(0, std::memory_order_relaxed); }

void tenprof_cupti_flush() {
  if (p_cuptiActivityFlushAll) p_cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

// Decode the buffers handed over so far; the number of records held after it.
int64_t tenprof_cupti_drain() {
  std::vector<std::pair<uint8_t*, size_t>> buffers;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    buffers.swap(g_completed);
  }
  for (auto& [buffer, valid] : buffers) {
    CUpti_Activity* record = nullptr;
    while (valid > 0 && p_cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) decode(record);
    std::free(buffer);
  }
  std::vector<std::shared_ptr<ThreadCalls>> threads;
  {
    std::lock_guard<std::mutex> lock(g_threads_mutex);
    threads = g_threads;
  }
  for (auto& thread : threads) {
    std::vector<ApiCall> calls;
    {
      std::lock_guard<std::mutex> lock(thread->mutex);
      calls.swap(thread->calls);
    }
    for (const ApiCall& c : calls) decode_call(c);
  }
  return int64_t(g_records.size());
}

const void* tenprof_cupti_records() { return g_records.data(); }
int64_t tenprof_cupti_record_size() { return int64_t(sizeof(Record)); }
const char* tenprof_cupti_names() { return g_names.data(); }
int64_t tenprof_cupti_names_size() { return int64_t(g_names.size()); }

// Forget what was decoded (after the caller copied it).
void tenprof_cupti_clear() {
  g_records.clear();
  g_records.shrink_to_fit();
  g_names.clear();
  g_name_ids.clear();
}

void tenprof_cupti_close() {
  // Not attached (never enabled, or closed already, as a detach between windows leaves it): any CUPTI call
  // here would attach it again only to finalize it.
  if (!p_cuptiActivityEnable || !g_registered) return;
  tenprof_cupti_enable(0);
  tenprof_cupti_flush();
  tenprof_cupti_drain();
  if (g_subscriber != nullptr) {
    p_cuptiUnsubscribe(g_subscriber);
    g_subscriber = nullptr;
  }
  if (p_cuptiFinalize) p_cuptiFinalize();
  g_registered = false;
}

}  // extern "C"

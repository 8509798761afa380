// tenprof's native call-site recorder: a RecordFunction observer that records, for every top-level op
// run on a Python thread, (thread, start, end, call path id) on the perf clock (CLOCK_MONOTONIC, what
// time.perf_counter_ns reads). A call path is the chain of (code object, bytecode offset) of the
// thread's Python frames, innermost first, cut at the stop code; paths are interned, and resolved to
// file/line/function in Python when the recording ends (tenprof.capture.native_lines).
//
// Asked to (tenprof_lines_every_op), it also records every op on every thread, and the named ranges
// (record_function): (thread, start, end, name id, sequence number, forward thread, depth, scope), the
// records a profiler's CPU side gives, without the profiler; names are interned by their text.
//
// Asked to (tenprof_lines_state_push), it stands where a profiler's state stands for the threads that run
// the script: code that records more when a profiler is there does so (torch's fast record function: the
// compiled graph's and each Triton launch's ranges; their keywords, which torch hands the profiler alone,
// do not come), and, asked to, it records the allocators' reports (every allocation and free of the CPU
// allocator and CUDA's caching allocator, with the totals after it), as a profiler's profile_memory does.
//
// Built by tenprof.capture.native_lines on first use (g++ against the installed torch's headers) and
// loaded with ctypes.PyDLL: every entry point below is called with the GIL held.
//
// The frame walk needs no GIL on CPython 3.11 and 3.12: only the owning thread pushes and pops its
// frames, and a running frame keeps its code alive. Other Pythons take the GIL and use the public API.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000 && !defined(Py_GIL_DISABLED)
#define TP_INTERNAL_FRAMES 1
#define Py_BUILD_CORE 1
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE
#endif
#include <ATen/record_function.h>
#include <c10/core/ScalarTypeToTypeMeta.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/profiler/orchestration/observer.h>
#include <cerrno>
#include <cstring>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <memory>
#include <deque>
#include <string>
#include <string_view>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

inline uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ULL ^ (v >> 29); }

struct KeyHash {
  template <typename T>
  size_t operator()(const std::vector<T>& key) const noexcept {
    uint64_t h = 1469598103934665603ULL;
    for (T v : key) h = mix(h, static_cast<uint64_t>(v));
    return static_cast<size_t>(h);
  }
};

// Fixed-width records in blocks that never move: appending never copies what is recorded (a growing
// vector copied it all at each doubling, and the copies' fresh pages faulted in the middle of the steps:
// most of the recorder's cost per op). Cleared, the blocks are kept for the next recording, up to kKept.
template <size_t Width>
class Records {
 public:
  static constexpr size_t kPerBlock = 8192;
  static constexpr size_t kKept = 8;

  size_t size() const { return size_; }
  int64_t* at(size_t i) { return blocks_[i / kPerBlock].get() + (i % kPerBlock) * Width; }
  const int64_t* at(size_t i) const { return blocks_[i / kPerBlock].get() + (i % kPerBlock) * Width; }
  // The index of a new record holding `values`.
  size_t append(const std::array<int64_t, Width>& values) {
    if (size_ == blocks_.size() * kPerBlock) blocks_.emplace_back(new int64_t[kPerBlock * Width]);
    std::memcpy(at(size_), values.data(), sizeof(int64_t) * Width);
    return size_++;
  }
  void clear() { size_ = 0; }
  void release() {  // clear, and give back all but kKept blocks
    size_ = 0;
    if (blocks_.size() > kKept) blocks_.resize(kKept);
  }

 private:
  std::vector<std::unique_ptr<int64_t[]>> blocks_;
  size_t size_ = 0;
};

// A thread's recently seen paths, direct-mapped by hash: a repeated path (the common case: the same
// lines every step) is found without the global lock or the global map's hashing.
struct CachedPath {
  uint64_t hash = 0;
  int64_t id = -1;
  std::vector<uint64_t> key;
};
constexpr size_t kCacheSize = 256;  // a power of two

struct CachedSignature {
  uint64_t hash = 0;
  int64_t id = -1;  // -1: empty
  std::vector<int64_t> key;
};

// An op name's id, by the address of the text the op gave: most names are an operator schema's, whose text
// never moves, so the address finds it without hashing the text; the text is still compared, since a
// name built for one op (a backward node's) may be freed and another built at the same address.
struct CachedName {
  const char* address = nullptr;
  const char* text = nullptr;  // the interned name (g_names: never moves), null-terminated
  int64_t id = -1;             // -1: empty
};

// thread, start, end, name id, sequence nr, forward thread, depth, scope, input signature id (-1: none;
// kNotAsked: wanted, but torch was not asked for this op's inputs, a step between sampled ones)
constexpr size_t kOpFields = 9;
constexpr int64_t kNotAsked = -2;

// A digest of one step's ops as a sum (so the order of threads and of their ops does not matter): of every
// op's name, of every op's name with its input signature (scalars' values left out) where its inputs were
// asked for, and of the sizes the allocators reported (where they are recorded): shapes that change where
// the inputs were not asked for mostly change these.
struct StepDigest {
  std::atomic<uint64_t> names{0};
  std::atomic<uint64_t> inputs{0};
  std::atomic<uint64_t> memory{0};
  std::atomic<int64_t> asked{0};
  std::atomic<int64_t> not_asked{0};
};

// time, thread, bytes (negative: freed), address, total allocated, total reserved, device type, device
// index, kind (kMemoryUsage or kOutOfMemory: an allocation that failed, its bytes the size asked for)
constexpr size_t kMemoryFields = 9;
constexpr int64_t kMemoryUsage = 0;
constexpr int64_t kOutOfMemory = 1;

// One per thread that ran an op; never freed (threads may outlive a recording), cleared at start.
struct ThreadBuffer {
  Records<4> records;  // thread, start, end, path id; end 0 while the op runs
  std::vector<uint64_t> key;     // scratch for the path of the current op
  uint64_t key_hash = 0;         // of key, as walk() built it
  std::vector<CachedPath> cache = std::vector<CachedPath>(kCacheSize);
  uint64_t cache_generation = 0;  // the g_generation the cache's ids belong to
  int64_t tid = 0;
  int64_t pthread = 0;  // pthread_self(): what CUPTI names the thread by in a trace without CPU ops
  std::atomic<int64_t> last_ns{0};  // its last op callback or allocator report, read by the sampler's gate
  int64_t open = -1;  // index of the top-level record being timed, -1 when none
  int depth = 0;      // ops of the observed scopes open on this thread
  // every op (when g_every_op): kOpFields per op, end 0 while it runs; the open ones' indexes, innermost last
  Records<kOpFields> ops;
  std::vector<size_t> open_ops;
  std::vector<const void*> open_fns;  // the RecordFunction of each open op, which its end callback gets too
  std::unordered_map<std::string_view, int64_t> name_ids;  // views into g_names' strings
  std::vector<CachedName> names = std::vector<CachedName>(kCacheSize);
  uint64_t names_generation = 0;  // the g_generation the name ids belong to (and the signature ids)
  // recently seen input signatures, direct-mapped by hash (an op's inputs mostly repeat from step to step)
  std::vector<CachedSignature> signatures = std::vector<CachedSignature>(kCacheSize);
  std::vector<int64_t> signature;  // scratch for the current op's
  std::vector<size_t> scalar_at;    // where its ints' and doubles' values are in it
  uint64_t shape_hash = 0;          // its hash without them
  Records<kMemoryFields> memory;  // the allocators' reports on this thread
  // this thread's part of the current step's digest: written by the thread alone (relaxed load and store,
  // no locked add), read and reset by tenprof_lines_step_digest; a lost update there costs one more step
  // with its inputs asked, never a wrong signature
  StepDigest digest;
  // whether it ran a backward node (autograd's own threads, or the one that calls backward on the CPU): its
  // ops are the step's, as the thread marking the steps' are; another thread's (a pin-memory thread, a
  // thread of the script's own) may fall anywhere in the steps and stay out of the digest
  std::atomic<bool> runs_backward{false};
};

std::mutex g_mutex;  // guards g_buffers, g_paths, g_path_codes; never held while taking the GIL
std::vector<ThreadBuffer*> g_buffers;
std::unordered_map<std::vector<uint64_t>, int64_t, KeyHash> g_paths;
std::vector<std::vector<uint64_t>> g_path_keys;  // by path id: code pointer, byte offset, ...
std::vector<PyObject*> g_codes;                  // every code object a path holds, one reference each
thread_local ThreadBuffer* t_buffer = nullptr;

PyObject* g_stop_code = nullptr;     // frames from this one outward are the launcher's
PyObject* g_on_new_path = nullptr;   // called (GIL held) when a path is first seen, until it returns True
std::atomic<bool> g_want_new_path{false};
std::atomic<int> g_compiling{0};     // Dynamo compilations running: their ops belong to the compile record
std::atomic<uint64_t> g_generation{1};  // bumped when path ids are cleared: threads' caches go stale
std::atomic<bool> g_every_op{false};    // record every op too
std::atomic<bool> g_inputs{false};      // and each op's input signature (shapes, dtypes, strides, scalars)
std::vector<std::vector<int64_t>> g_signatures;  // by id: the encoded inputs (see encode_inputs)
std::unordered_map<std::vector<int64_t>, int64_t, KeyHash> g_signature_ids;
std::atomic<bool> g_sampler_paused{false};  // the host sampler's gate returns at once while paused
std::mutex g_skipped_mutex;
std::vector<int64_t> g_skipped;  // the gate's skipped rounds: (thread, time) pairs
std::deque<std::string> g_names;        // op names by id (a deque: its strings never move)
std::unordered_map<std::string_view, int64_t> g_name_ids;
std::atomic<bool> g_memory_wanted{false};  // the allocators' reports asked for (tenprof_lines_state_push)
std::atomic<bool> g_memory_on{false};      // and recorded now (off while paused)

ThreadBuffer* buffer() {
  if (t_buffer == nullptr) {
    t_buffer = new ThreadBuffer();
    t_buffer->tid = static_cast<int64_t>(syscall(SYS_gettid));
    t_buffer->pthread = static_cast<int64_t>(pthread_self());
    std::lock_guard<std::mutex> guard(g_mutex);
    g_buffers.push_back(t_buffer);
  }
  return t_buffer;
}

// The current path of this thread into key (and its hash); false when the thread runs no Python.
bool walk(std::vector<uint64_t>& key, uint64_t& hash) {
  key.clear();
  hash = 1469598103934665603ULL;
#if defined(TP_INTERNAL_FRAMES)
  PyThreadState* ts = PyGILState_GetThisThreadState();
  if (ts == nullptr || ts->cframe == nullptr) return false;
  for (_PyInterpreterFrame* f = ts->cframe->current_frame; f != nullptr; f = f->previous) {
    if (_PyFrame_IsIncomplete(f)) continue;  // what frame.f_back skips too
    PyObject* code = reinterpret_cast<PyObject*>(f->f_code);
    if (code == g_stop_code) break;
    uint64_t offset = static_cast<uint64_t>(_PyInterpreterFrame_LASTI(f)) * sizeof(_Py_CODEUNIT);
    key.push_back(reinterpret_cast<uintptr_t>(code));
    key.push_back(offset);
    hash = mix(mix(hash, reinterpret_cast<uintptr_t>(code)), offset);
  }
  return ts->cframe->current_frame != nullptr;
#else
  if (PyGILState_GetThisThreadState() == nullptr) return false;
  PyGILState_STATE state = PyGILState_Ensure();
  PyFrameObject* f = PyEval_GetFrame();  // borrowed
  bool any = f != nullptr;
  Py_XINCREF(f);
  while (f != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(f);
    if (reinterpret_cast<PyObject*>(code) == g_stop_code) {
      Py_DECREF(code);
      Py_DECREF(f);
      break;
    }
    uint64_t offset = static_cast<uint64_t>(PyFrame_GetLasti(f));
    key.push_back(reinterpret_cast<uintptr_t>(code));
    key.push_back(offset);
    hash = mix(mix(hash, reinterpret_cast<uintptr_t>(code)), offset);
    Py_DECREF(code);  // the running frame keeps it alive
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  PyGILState_Release(state);
  return any;
#endif
}

int64_t path_id(const std::vector<uint64_t>& key) {
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    auto found = g_paths.find(key);
    if (found != g_paths.end()) return found->second;
  }
  // First sight: keep its code objects alive (their addresses are the key), with the GIL.
  PyGILState_STATE state = PyGILState_Ensure();
  int64_t id;
  bool added = false;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    auto found = g_paths.find(key);
    if (found != g_paths.end()) {
      id = found->second;
    } else {
      id = static_cast<int64_t>(g_path_keys.size());
      g_paths.emplace(key, id);
      g_path_keys.push_back(key);
      for (size_t i = 0; i < key.size(); i += 2) {
        PyObject* code = reinterpret_cast<PyObject*>(static_cast<uintptr_t>(key[i]));
        Py_INCREF(code);
        g_codes.push_back(code);
      }
      added = true;
    }
  }
  if (added && g_want_new_path.load(std::memory_order_relaxed) && g_on_new_path != nullptr) {
    PyObject* done = PyObject_CallNoArgs(g_on_new_path);
    if (done == nullptr) {
      PyErr_Clear();
    } else {
      if (done == Py_True) g_want_new_path.store(false);
      Py_DECREF(done);
    }
  }
  PyGILState_Release(state);
  return id;
}

// The path id of b->key: from the thread's cache, else from the global map (and then cached).
int64_t cached_path_id(ThreadBuffer* b) {
  uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (b->cache_generation != generation) {
    for (CachedPath& entry : b->cache) entry.id = -1;
    b->cache_generation = generation;
  }
  CachedPath& entry = b->cache[b->key_hash & (kCacheSize - 1)];
  if (entry.id >= 0 && entry.hash == b->key_hash && entry.key == b->key) return entry.id;
  int64_t id = path_id(b->key);
  entry.hash = b->key_hash;
  entry.id = id;
  entry.key = b->key;
  return id;
}

// The id of an op's name: from the thread's cache by address, else its map, else the global one (and
// then kept in the thread's).
int64_t name_id(ThreadBuffer* b, const char* text) {
  uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (b->names_generation != generation) {
    b->name_ids.clear();
    for (CachedSignature& entry : b->signatures) entry.id = -1;
    for (CachedName& entry : b->names) entry.id = -1;
    b->names_generation = generation;
  }
  CachedName& cached = b->names[(reinterpret_cast<uintptr_t>(text) >> 3) & (kCacheSize - 1)];
  if (cached.id >= 0 && cached.address == text && std::strcmp(text, cached.text) == 0) return cached.id;
  std::string_view name(text);
  auto found = b->name_ids.find(name);
  if (found != b->name_ids.end()) {
    cached = {text, found->first.data(), found->second};
    return found->second;
  }
  int64_t id;
  std::string_view kept;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    auto global = g_name_ids.find(name);
    if (global == g_name_ids.end()) {
      g_names.emplace_back(name);
      kept = g_names.back();
      id = static_cast<int64_t>(g_names.size() - 1);
      g_name_ids.emplace(kept, id);
    } else {
      kept = global->first;
      id = global->second;
    }
  }
  b->name_ids.emplace(kept, id);
  cached = {text, kept.data(), id};
  return id;
}

// Input kinds of an encoded signature: each input is its kind, then its values.
enum InputKind : int64_t {
  kNone = 0,        // None, an undefined tensor, or a kind not encoded
  kTensor = 1,      // dtype, rank, sizes..., strides...
  kInt = 2,         // value
  kBool = 3,        // value
  kDouble = 4,      // the value's bits
  kIntList = 5,     // length, values...
  kTensorList = 6,  // length, then per tensor: dtype, rank, sizes..., strides...
};

void encode_tensor(const at::Tensor& t, std::vector<int64_t>& out) {
  out.push_back(static_cast<int64_t>(t.scalar_type()));
  out.push_back(t.dim());
  for (int64_t size : t.sizes()) out.push_back(size);
  if (t.layout() == c10::kStrided) {
    for (int64_t stride : t.strides()) out.push_back(stride);
  } else {
    for (int64_t d = 0; d < t.dim(); d++) out.push_back(0);
  }
}

// The op's inputs, as the profiler's record_shapes reads them, encoded into out; where each int's and
// double's value is in out, into scalars.
void encode_inputs(const at::RecordFunction& fn, std::vector<int64_t>& out, std::vector<size_t>& scalars) {
  out.clear();
  scalars.clear();
  for (const c10::IValue& v : fn.inputs()) {
    if (v.isTensor() && v.toTensor().defined()) {
      out.push_back(kTensor);
      encode_tensor(v.toTensor(), out);
    } else if (v.isBool()) {
      out.insert(out.end(), {kBool, v.toBool() ? 1 : 0});
    } else if (v.isInt()) {
      scalars.push_back(out.size() + 1);
      out.insert(out.end(), {kInt, v.toInt()});
    } else if (v.isDouble()) {
      double d = v.toDouble();
      int64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      scalars.push_back(out.size() + 1);
      out.insert(out.end(), {kDouble, bits});
    } else if (v.isIntList()) {
      c10::List<int64_t> list = v.toIntList();
      out.push_back(kIntList);
      out.push_back(static_cast<int64_t>(list.size()));
      for (int64_t x : list) out.push_back(x);
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list = v.toTensorList();
      out.push_back(kTensorList);
      out.push_back(static_cast<int64_t>(list.size()));
      for (const at::Tensor& t : list) {
        if (t.defined()) {
          encode_tensor(t, out);
        } else {
          out.insert(out.end(), {-1, 0});  // an undefined tensor: no dtype, rank 0
        }
      }
    } else {
      out.push_back(kNone);
    }
  }
}

// The id of the op's input signature: from the thread's cache, else the global map (and then cached).
int64_t signature_id(ThreadBuffer* b, const at::RecordFunction& fn) {
  encode_inputs(fn, b->signature, b->scalar_at);
  // One pass for the key's hash (KeyHash's) and the step digest's part: the signature without its scalars'
  // values (a learning rate, an optimizer's bias correction, the random generator's offset that attention's
  // dropout takes as an int: they change every step where the shapes do not, and made fp32 GPT-2 ask in
  // every step; input_sampling.py leaves them out of ops whose signature it copies where they differ).
  uint64_t hash = 1469598103934665603ULL, shape = hash;
  for (size_t i = 0, d = 0; i < b->signature.size(); i++) {
    uint64_t v = static_cast<uint64_t>(b->signature[i]);
    hash = mix(hash, v);
    if (d < b->scalar_at.size() && b->scalar_at[d] == i) {
      d++;
    } else {
      shape = mix(shape, v);
    }
  }
  b->shape_hash = shape;
  CachedSignature& entry = b->signatures[hash & (kCacheSize - 1)];
  if (entry.id >= 0 && entry.hash == hash && entry.key == b->signature) return entry.id;
  int64_t id;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    auto global = g_signature_ids.find(b->signature);
    if (global == g_signature_ids.end()) {
      id = static_cast<int64_t>(g_signatures.size());
      g_signatures.push_back(b->signature);
      g_signature_ids.emplace(b->signature, id);
    } else {
      id = global->second;
    }
  }
  entry.hash = hash;
  entry.id = id;
  entry.key = b->signature;
  return id;
}

inline void add_relaxed(std::atomic<uint64_t>& sum, uint64_t v) {
  sum.store(sum.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}

inline uint64_t spread(uint64_t v) {  // splitmix64's finalizer: a sum of these collides only by chance
  v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ULL;
  v = (v ^ (v >> 27)) * 0x94d049bb133111ebULL;
  return v ^ (v >> 31);
}

// Ops, not named ranges (a step's own range is named by its number), go into the step's digest.
void add_to_digest(ThreadBuffer* b, int64_t name, int64_t signature, uint64_t shape) {
  uint64_t h = spread(static_cast<uint64_t>(name) + 1);
  add_relaxed(b->digest.names, h);
  std::atomic<int64_t>& count = signature == kNotAsked ? b->digest.not_asked : b->digest.asked;
  count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (signature != kNotAsked) add_relaxed(b->digest.inputs, spread(h ^ shape));
}

void open_op(ThreadBuffer* b, const at::RecordFunction& fn, int64_t start) {
  int64_t name = name_id(b, fn.name());  // first: it clears the thread's ids of an older generation
  bool range = fn.scope() == at::RecordScope::USER_SCOPE;
  int64_t signature = -1;
  // fn.needsInputs(): whether torch handed this op's inputs to the callbacks, which the opener asks for
  // only in the steps that sample them (tenprof_lines_ask_inputs)
  if (g_inputs.load(std::memory_order_relaxed) && !range) signature = fn.needsInputs() ? signature_id(b, fn) : kNotAsked;
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION && !b->runs_backward.load(std::memory_order_relaxed)) {
    b->runs_backward.store(true, std::memory_order_relaxed);
  }
  b->open_ops.push_back(b->ops.append({b->tid, start, 0, name, fn.seqNr(), static_cast<int64_t>(fn.forwardThreadId()),
                                       b->depth, static_cast<int64_t>(fn.scope()), signature}));
  b->open_fns.push_back(&fn);
  if (!range) add_to_digest(b, name, signature, signature >= 0 ? b->shape_hash : 0);
}

// Named ranges (record_function, the profiler's step ranges) reach the callbacks only when every op is
// recorded; they are recorded and leave the call-site logic, which looks at ops, alone.
inline bool is_range(const at::RecordFunction& fn) { return fn.scope() == at::RecordScope::USER_SCOPE; }

// Kineto's callback runs between the opener's start and the closer's end (callbacks run in the order
// they were added: the opener before the profiler's, the closer after it), so each record contains the
// trace's op, however short, and the importer's midpoint join cannot miss it.
std::unique_ptr<at::ObserverContext> on_open(const at::RecordFunction& fn) {
  int64_t start = now_ns();
  ThreadBuffer* b = buffer();
  b->last_ns.store(start, std::memory_order_relaxed);
  // Every op, those of Dynamo's compilations too (the profiler records them: on the CPU a compiled MLP's
  // first step held 13412 ops under the default capture, 10196 without them, 13300 with them); their
  // call sites are not recorded below: the compile record covers them.
  if (g_every_op.load(std::memory_order_relaxed)) open_op(b, fn, start);
  if (is_range(fn)) return nullptr;
  if (b->depth++ != 0 || g_compiling.load(std::memory_order_relaxed) != 0) return nullptr;
  if (!walk(b->key, b->key_hash)) return nullptr;
  int64_t id = cached_path_id(b);
  b->open = static_cast<int64_t>(b->records.append({b->tid, start, 0, id}));
  return nullptr;
}

std::unique_ptr<at::ObserverContext> on_nothing(const at::RecordFunction&) { return nullptr; }

void on_close(const at::RecordFunction& fn, at::ObserverContext*) {
  int64_t end = now_ns();  // one read for the op's record and the call site's (the clock costs per op)
  ThreadBuffer* b = buffer();
  b->last_ns.store(end, std::memory_order_relaxed);
  // Ops nest on a thread, so it is the innermost open one, unless ends were missed (callbacks paused
  // between an op's start and its end): then it is found further down, and the ones above it, whose ends
  // were missed, stay unfinished (left out). One that started unrecorded has no record.
  const void* key = &fn;
  for (size_t k = b->open_fns.size(); k-- > 0;) {
    if (b->open_fns[k] == key) {
      b->ops.at(b->open_ops[k])[2] = end;
      b->open_ops.resize(k);
      b->open_fns.resize(k);
      break;
    }
  }
  if (is_range(fn)) return;
  if (b->depth > 0) b->depth--;  // an op open when the observer was added ends unseen at its start
  if (b->depth == 0 && b->open >= 0) {
    b->records.at(static_cast<size_t>(b->open))[2] = end;
    b->open = -1;
  }
}

const std::unordered_set<at::RecordScope, std::hash<at::RecordScope>> kScopes = {
    at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION};
const std::unordered_set<at::RecordScope, std::hash<at::RecordScope>> kScopesAndRanges = {
    at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE};
at::CallbackHandle g_opener = 0;
at::CallbackHandle g_closer = 0;  // 0 when the opener closes too (g_alone)
bool g_started = false;
bool g_paused = false;
// Whether the opener asks torch for every op's inputs now (with g_inputs): off in the steps between sampled
// ones (tenprof_lines_ask_inputs), where torch then does not box each op's arguments for it.
bool g_ask_inputs = true;
// No profiler's callbacks run beside (tenprof_lines_alone): one callback opens and closes each record. Two
// cost more than twice one's dispatch: the autograd engine copies the callbacks into every node's thread
// state, and each copy rebuilds a cache per scope from every callback.
bool g_alone = false;

void clear_paths() {
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  for (PyObject* code : g_codes) Py_DECREF(code);
  g_codes.clear();
  g_paths.clear();
  g_path_keys.clear();
  g_name_ids.clear();
  g_names.clear();
  g_signature_ids.clear();
  g_signatures.clear();
}

void clear_ops(ThreadBuffer* b) {
  b->ops.clear();
  b->open_ops.clear();
  b->open_fns.clear();
}

// The finished records (end, their third field, set; every record when not `only_finished`) of every
// thread's `field`, as int64 bytes.
template <size_t Width>
PyObject* finished_bytes(Records<Width> ThreadBuffer::*field, bool only_finished = true) {
  std::vector<int64_t> all;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    for (ThreadBuffer* b : g_buffers) {
      const Records<Width>& records = b->*field;
      for (size_t i = 0; i < records.size(); i++) {
        const int64_t* record = records.at(i);
        if (!only_finished || record[2] != 0) all.insert(all.end(), record, record + Width);
      }
    }
  }
  return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(all.data()),
                                   static_cast<Py_ssize_t>(all.size() * sizeof(int64_t)));
}

// A Python list with a tuple per key, item(key, i) giving its i-th element (a new reference).
template <typename Key, typename Item>
PyObject* list_of_tuples(const std::vector<Key>& keys, Item item) {
  PyObject* out = PyList_New(static_cast<Py_ssize_t>(keys.size()));
  if (out == nullptr) return nullptr;
  for (size_t p = 0; p < keys.size(); p++) {
    PyObject* row = PyTuple_New(static_cast<Py_ssize_t>(keys[p].size()));
    if (row == nullptr) {
      Py_DECREF(out);
      return nullptr;
    }
    for (size_t i = 0; i < keys[p].size(); i++) PyTuple_SET_ITEM(row, static_cast<Py_ssize_t>(i), item(keys[p], i));
    PyList_SET_ITEM(out, static_cast<Py_ssize_t>(p), row);
  }
  return out;
}

// Where a profiler's state stands in a thread's debug info (c10::DebugInfoKind::PROFILER_STATE), which the
// allocators report to, autograd's threads inherit from the thread that runs backward, and torch's fast
// record function asks for before it records: a profiler state that profiles nothing (code that asks
// whether a profiler runs reads "no"), but takes the memory reports. A profiler started later on the
// thread stands above it until it stops (and takes the reports meanwhile).
class RecorderState final : public torch::profiler::impl::ProfilerStateBase {
 public:
  RecorderState()
      : ProfilerStateBase(torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::Disabled)) {}

  bool memoryProfilingEnabled() const override { return g_memory_on.load(std::memory_order_relaxed); }

  torch::profiler::impl::ActiveProfilerType profilerType() override {
    return torch::profiler::impl::ActiveProfilerType::NONE;
  }

  void reportMemoryUsage(void* ptr, int64_t bytes, size_t allocated, size_t reserved, c10::Device device) override {
    add(kMemoryUsage, reinterpret_cast<intptr_t>(ptr), bytes, allocated, reserved, device);
  }

  void reportOutOfMemory(int64_t bytes, size_t allocated, size_t reserved, c10::Device device) override {
    add(kOutOfMemory, 0, bytes, allocated, reserved, device);
  }

 private:
  static void add(int64_t kind, int64_t address, int64_t bytes, size_t allocated, size_t reserved, c10::Device device) {
    if (!g_memory_on.load(std::memory_order_relaxed)) return;
    ThreadBuffer* b = buffer();
    int64_t now = now_ns();
    // the host sampler's gate reads it as an op callback: in a step run with the op callbacks off
    // (TENPROF_OPS=sampled) the allocations are what says the thread runs ops (its rounds are then skipped
    // and given the copied call sites' lines); in other steps an op's callbacks surround its allocations
    b->last_ns.store(now, std::memory_order_relaxed);
    add_relaxed(b->digest.memory, spread(static_cast<uint64_t>(bytes) ^ (static_cast<uint64_t>(kind) << 62)));
    b->memory.append({now, b->tid, bytes, address, static_cast<int64_t>(allocated), static_cast<int64_t>(reserved),
                      static_cast<int64_t>(device.type()), static_cast<int64_t>(device.index()), kind});
  }
};

std::shared_ptr<RecorderState> g_state;  // pushed on the thread that called state_push

// The opener's needsInputs is fixed when it is added: asking or not asking is another callback in its place.
void add_opener() {
  g_opener = at::addGlobalCallback(at::RecordFunctionCallback(on_open, g_alone ? on_close : nullptr)
                                       .scopes(g_every_op.load() ? kScopesAndRanges : kScopes)
                                       .needsInputs(g_every_op.load() && g_inputs.load() && g_ask_inputs));
}

// A named range as torch's record_function makes one (USER_SCOPE: the profiler writes it as a user
// annotation, this recorder as a range), its name kept beside it: the record function holds a view of it,
// which the profiler reads when the range ends. Members end in reverse order: the range before its name.
struct NamedRange {
  std::string name;
  at::RecordFunction range{at::RecordScope::USER_SCOPE};
};

}  // namespace

extern "C" {

// tenprof's own ranges at step boundaries (clock syncs, step ranges) and the script's tenprof.scope ranges,
// opened and closed without record_function's cost (about 22 us a range on the 2-core development machine:
// two dispatcher ops and a script object, against about 2 us here). The handle goes back to the exit.
void* tenprof_range_enter(const char* name) {
  auto* named = new NamedRange();
  named->name = name;
  // as torch's RECORD_USER_SCOPE macro does it (no inputs)
  if (named->range.isActive()) named->range.before(named->name.c_str(), c10::ArrayRef<const c10::IValue>{});
  return named;
}

void tenprof_range_exit(void* handle) { delete static_cast<NamedRange*>(handle); }

// Add the opener, disabled: called before the profiler starts, so that it runs first.
void tenprof_lines_prepare() {
  if (g_opener != 0) return;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    clear_paths();
    for (ThreadBuffer* b : g_buffers) {
      b->records.clear();
      b->open = -1;
      clear_ops(b);
    }
  }
  add_opener();
  at::disableCallback(g_opener);
}

// Start observing. stop_code: a code object or None; on_new_path: a callable or None.
int tenprof_lines_start(PyObject* stop_code, PyObject* on_new_path) {
  if (g_started) return -1;
  tenprof_lines_prepare();
  Py_XDECREF(g_stop_code);
  Py_XDECREF(g_on_new_path);
  g_stop_code = stop_code == Py_None ? nullptr : stop_code;
  g_on_new_path = on_new_path == Py_None ? nullptr : on_new_path;
  Py_XINCREF(g_stop_code);
  Py_XINCREF(g_on_new_path);
  g_want_new_path.store(g_on_new_path != nullptr);
  g_compiling.store(0);
  if (!g_alone) {
    g_closer = at::addGlobalCallback(
        at::RecordFunctionCallback(on_nothing, on_close).scopes(g_every_op.load() ? kScopesAndRanges : kScopes));
  }
  g_started = true;
  g_paused = false;
  at::reenableCallback(g_opener);
#if defined(TP_INTERNAL_FRAMES)
  return 1;
#else
  return 0;
#endif
}

// Paused: the callbacks are off, so ops pay nothing for them.
void tenprof_lines_pause(int paused) {
  if (!g_started) return;
  g_paused = paused != 0;
  if (paused) {
    at::disableCallback(g_opener);
    if (g_closer != 0) at::disableCallback(g_closer);
  } else {
    if (g_closer != 0) at::reenableCallback(g_closer);
    at::reenableCallback(g_opener);
  }
}

// Ask torch for every op's inputs from now on (1) or not (0); returns 1 where that is what the opener does
// now, 0 where it cannot sample: its inputs are not recorded, or a profiler's callbacks run beside it (the
// opener must stay ahead of them, and a new one would be added after). Between steps: an op another thread
// starts while the opener is swapped may go unrecorded.
int tenprof_lines_ask_inputs(int ask) {
  if (!g_alone || !g_every_op.load() || !g_inputs.load()) return ask != 0 ? 1 : 0;
  if ((ask != 0) == g_ask_inputs) return 1;
  g_ask_inputs = ask != 0;
  if (g_opener == 0) return 1;  // tenprof_lines_prepare adds it so
  at::removeCallback(g_opener);
  add_opener();
  if (!g_started || g_paused) at::disableCallback(g_opener);
  return 1;
}

// The digest of the ops opened since the last call (StepDigest) by the calling thread (the one marking the
// steps) and those that ran backward nodes; every thread's reset: names, inputs, memory, ops whose inputs
// were asked for, ops whose were not.
PyObject* tenprof_lines_step_digest() {
  uint64_t names = 0, inputs = 0, memory = 0;
  int64_t asked = 0, not_asked = 0;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    for (ThreadBuffer* b : g_buffers) {
      bool counted = b == t_buffer || b->runs_backward.load(std::memory_order_relaxed);
      uint64_t n = b->digest.names.exchange(0, std::memory_order_relaxed);
      uint64_t i = b->digest.inputs.exchange(0, std::memory_order_relaxed);
      uint64_t m = b->digest.memory.exchange(0, std::memory_order_relaxed);
      int64_t a = b->digest.asked.exchange(0, std::memory_order_relaxed);
      int64_t na = b->digest.not_asked.exchange(0, std::memory_order_relaxed);
      if (!counted) continue;
      names += n;
      inputs += i;
      memory += m;
      asked += a;
      not_asked += na;
    }
  }
  return Py_BuildValue("(KKKLL)", static_cast<unsigned long long>(names), static_cast<unsigned long long>(inputs),
                       static_cast<unsigned long long>(memory), static_cast<long long>(asked),
                       static_cast<long long>(not_asked));
}

void tenprof_lines_compiling(int delta) { g_compiling.fetch_add(delta); }

void tenprof_lines_stop() {
  if (g_opener != 0) at::removeCallback(g_opener);
  if (g_closer != 0) at::removeCallback(g_closer);
  g_opener = g_closer = 0;
  g_started = false;
  g_ask_inputs = true;  // a recorder after this one starts asking
}

// Finished records of every thread, as int64 bytes: thread, start, end, path id per record.
PyObject* tenprof_lines_records() { return finished_bytes(&ThreadBuffer::records); }

// Paths by id: a list of tuples (code, byte offset, code, byte offset, ...), innermost frame first.
PyObject* tenprof_lines_paths() {
  std::lock_guard<std::mutex> guard(g_mutex);
  return list_of_tuples(g_path_keys, [](const std::vector<uint64_t>& key, size_t i) -> PyObject* {
    if (i % 2 != 0) return PyLong_FromUnsignedLongLong(key[i]);
    PyObject* code = reinterpret_cast<PyObject*>(static_cast<uintptr_t>(key[i]));
    Py_INCREF(code);
    return code;
  });
}

// Drop the records and paths (and the references to their code objects).
void tenprof_lines_clear() {
  std::lock_guard<std::mutex> guard(g_mutex);
  clear_paths();
  for (ThreadBuffer* b : g_buffers) {
    b->records.release();
    clear_ops(b);
    b->ops.release();
    b->memory.release();
  }
}

// Record every op and named range too (1) or only the top-level call sites (0), and with every op its
// input signature (inputs 1); before tenprof_lines_prepare (the opener's scopes are set when it is added).
void tenprof_lines_every_op(int on, int inputs) {
  g_every_op.store(on != 0);
  g_inputs.store(inputs != 0);
}

// No profiler records beside this recorder (1): one callback opens and closes each record; or one may (0):
// the opener runs before the profiler's callback and the closer after it. Before tenprof_lines_prepare.
void tenprof_lines_alone(int alone) {
  if (g_opener == 0) g_alone = alone != 0;
}

// The input signatures by id: a list of tuples of ints (encode_inputs).
PyObject* tenprof_lines_signatures() {
  std::lock_guard<std::mutex> guard(g_mutex);
  return list_of_tuples(g_signatures,
                        [](const std::vector<int64_t>& key, size_t i) { return PyLong_FromLongLong(key[i]); });
}

// The name the profiler gives a dtype (its TypeMeta name: "float", "long int", "c10::BFloat16").
PyObject* tenprof_lines_dtype_name(int scalar_type) {
  std::string_view name = c10::scalarTypeToTypeMeta(static_cast<c10::ScalarType>(scalar_type)).name();
  return PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
}

// Finished op records of every thread, as int64 bytes, kOpFields per op (see ThreadBuffer::ops).
PyObject* tenprof_lines_ops() { return finished_bytes(&ThreadBuffer::ops); }

// (OS thread id, pthread_self()) of every thread that ran an op since the library was loaded.
PyObject* tenprof_lines_threads() {
  std::lock_guard<std::mutex> guard(g_mutex);
  std::vector<std::vector<int64_t>> threads;
  threads.reserve(g_buffers.size());
  for (const ThreadBuffer* b : g_buffers) threads.push_back({b->tid, b->pthread});
  return list_of_tuples(threads, [](const std::vector<int64_t>& key, size_t i) { return PyLong_FromLongLong(key[i]); });
}

// The op names by id.
PyObject* tenprof_lines_op_names() {
  std::lock_guard<std::mutex> guard(g_mutex);
  PyObject* out = PyList_New(static_cast<Py_ssize_t>(g_names.size()));
  if (out == nullptr) return nullptr;
  for (size_t i = 0; i < g_names.size(); i++) {
    PyObject* name = PyUnicode_DecodeUTF8(g_names[i].data(), static_cast<Py_ssize_t>(g_names[i].size()), "replace");
    if (name == nullptr) {
      Py_DECREF(out);
      return nullptr;
    }
    PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i), name);
  }
  return out;
}

// Stand where a profiler's state stands on this thread and the threads it hands work to (autograd's),
// recording the allocators' reports (memory 1) or not; 0, or -1 when already there.
int tenprof_lines_state_push(int memory) {
  if (g_state != nullptr) return -1;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    for (ThreadBuffer* b : g_buffers) b->memory.release();
  }
  g_state = std::make_shared<RecorderState>();
  c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, g_state);
  g_memory_wanted.store(memory != 0);
  g_memory_on.store(memory != 0);
  return 0;
}

// Paused (1), the reports are not recorded (allocators do not even make them); resumed (0), they are, if
// asked for when the state was pushed.
void tenprof_lines_memory_pause(int paused) { g_memory_on.store(paused == 0 && g_memory_wanted.load()); }

// Leave this thread's debug info (on the thread that pushed). 1 when the state left it, 0 when something
// pushed after it is still there (a profiler not stopped): it stays, recording nothing.
int tenprof_lines_state_pop() {
  g_memory_wanted.store(false);
  g_memory_on.store(false);
  if (g_state == nullptr) return 1;
  bool on_top = c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) == g_state.get();
  if (on_top) c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  g_state.reset();
  return on_top ? 1 : 0;
}

// The allocators' reports of every thread, as int64 bytes, kMemoryFields per report.
PyObject* tenprof_lines_memory() { return finished_bytes(&ThreadBuffer::memory, false); }

// The host sampler's gate. Called through ctypes.CDLL, so without the GIL: waits until a round of the
// sampler is due (every period_ns) at a time when one of the threads `tids` (OS ids, n of them) that have
// run ops has made no op callback (nor allocator report) for a period, and returns that time. A round due
// while every one of them was inside or between ops (a callback less than a period ago) is skipped:
// recorded as (thread, time) for each of them, to be given the line of its op's call site
// (tenprof.capture.skipped_rounds), and the lock is not asked for. Threads that never ran an op (a queue's
// feeder, a logger) are not waited for: their next sample stands for the skipped time, at the line they
// then are, usually where they wait. Returns 0 after max_wait_ns without a round, or at once while paused.
// When none of `tids` ran an op, every round is due.
int64_t tenprof_lines_sampler_wait(int64_t period_ns, int64_t max_wait_ns, const int64_t* tids, int64_t n) {
  int64_t start = now_ns();
  std::vector<const ThreadBuffer*> watched;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    for (const ThreadBuffer* b : g_buffers) {
      for (int64_t i = 0; i < n; i++) {
        if (b->tid == tids[i]) watched.push_back(b);
      }
    }
  }
  bool can_skip = !watched.empty();
  for (int64_t due = start + period_ns;; due += period_ns) {
    timespec until{static_cast<time_t>(due / 1000000000LL), static_cast<long>(due % 1000000000LL)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
    }
    if (g_sampler_paused.load(std::memory_order_relaxed)) return 0;
    int64_t now = now_ns();
    bool busy = can_skip;
    for (const ThreadBuffer* b : watched) busy = busy && now - b->last_ns.load(std::memory_order_relaxed) < period_ns;
    if (!busy) return now;
    {
      std::lock_guard<std::mutex> guard(g_skipped_mutex);
      for (const ThreadBuffer* b : watched) g_skipped.insert(g_skipped.end(), {b->tid, now});
    }
    if (due + period_ns - start > max_wait_ns) return 0;
  }
}

// The gate's pause (1) or resume (0): paused, it returns at once and skips nothing.
void tenprof_lines_sampler_pause(int paused) { g_sampler_paused.store(paused != 0); }

// The rounds the gate skipped since the last call, as int64 bytes of (thread, time) pairs; cleared.
PyObject* tenprof_lines_sampler_skipped() {
  std::vector<int64_t> taken;
  {
    std::lock_guard<std::mutex> guard(g_skipped_mutex);
    taken.swap(g_skipped);
  }
  return PyBytes_FromStringAndSize(reinterpret_cast<const char*>(taken.data()),
                                   static_cast<Py_ssize_t>(taken.size() * sizeof(int64_t)));
}

}  // extern "C"

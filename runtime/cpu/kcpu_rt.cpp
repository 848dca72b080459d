// kcpu_rt.cpp — the fiber scheduler behind kcpu.h, built once into libkcpu.so.
//
// Why fibers: a CUDA block is up to 1024 threads that meet at __syncthreads and in warp
// collectives. Each thread here is a fiber with its own mmap'd stack (plus a guard page) and all
// fibers of a block run on one OS thread; a fiber leaves only at a barrier or a warp collective, so
// shared memory needs no locks and every interleaving is chosen by the schedule (fwd/rev/rnd order,
// round-robin or greedy). The switch is a small asm routine (callee-saved registers plus mxcsr and
// the x87 control word): ucontext's swapcontext makes a syscall per switch, ~15x slower.
//
// Errors never kill the process: a failing fiber records the message and switches back to the
// scheduler, which abandons the block; faults (SIGSEGV/SIGFPE/...) inside a kernel are caught with
// sigsetjmp on an alternate stack when cfg->catch_signals is set (not under ASan, which reports).
// x86-64 only (the asm switch).
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#define KCPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
struct U3 { unsigned x, y, z; };
}

extern "C" {  // braces: `extern "C" T x;` alone would only declare
__attribute__((visibility("default"))) U3 kcpu_threadIdx, kcpu_blockIdx, kcpu_blockDim,
    kcpu_gridDim;
}

// Must match kcpu.h.
struct kcpu_cfg {
  unsigned grid[3], block[3];
  unsigned long long smem_bytes;
  int cp_eager, greedy, order;
  unsigned seed;
  int catch_signals;
  unsigned stack_kb;
};
struct kcpu_region { void* ptr; unsigned long long bytes; };

enum { KCPU_BAR = 0, KCPU_BAR_COUNT, KCPU_BAR_AND, KCPU_BAR_OR };
enum {
  OP_SYNCWARP = 0, OP_SHFL_IDX, OP_SHFL_UP, OP_SHFL_DOWN, OP_SHFL_XOR, OP_BALLOT, OP_ANY, OP_ALL,
  OP_RED_ADD, OP_RED_MIN, OP_RED_MAX, OP_RED_UMIN, OP_RED_UMAX, OP_RED_AND, OP_RED_OR, OP_RED_XOR,
  OP_MATCH_ANY, OP_MATCH_ALL, OP_COUNT
};
static const char* const kOpNames[OP_COUNT] = {
    "__syncwarp", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
    "__ballot_sync", "__any_sync", "__all_sync", "__reduce_add_sync", "__reduce_min_sync",
    "__reduce_max_sync", "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync",
    "__reduce_or_sync", "__reduce_xor_sync", "__match_any_sync", "__match_all_sync"};

// ---- context switch ----------------------------------------------------------------------------
// kcpu_switch(save, to): push callee-saved state, *save = rsp, rsp = to, pop, ret.
// A new fiber's stack holds that frame with the return address kcpu_fiber_entry, which calls
// kcpu_fiber_main(rbx).
extern "C" void kcpu_switch(void** save_sp, void* to_sp);
extern "C" void kcpu_fiber_entry();
asm(R"(
  .text
  .globl kcpu_switch
  .hidden kcpu_switch
  .type kcpu_switch, @function
kcpu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size kcpu_switch, .-kcpu_switch
  .globl kcpu_fiber_entry
  .hidden kcpu_fiber_entry
  .type kcpu_fiber_entry, @function
kcpu_fiber_entry:
  movq %rbx, %rdi
  call kcpu_fiber_main
  ud2
  .size kcpu_fiber_entry, .-kcpu_fiber_entry
)");

namespace {

enum State { RUN, BAR, WARP, DONE };

struct Copy { void* dst; const void* src; int bytes, src_bytes; bool done; };

struct Fiber {
  void* sp = nullptr;
  char* stack_lo = nullptr;  // usable stack (above the guard page)
  size_t stack_size = 0;
  void* asan_fake = nullptr;
  State state = DONE;
  U3 tid{};
  unsigned lin = 0, lane = 0, warp = 0, pos = 0;  // pos: index in the schedule order
  const char* file = nullptr;                      // site of the barrier / collective it waits at
  int line = 0;
  int bar_kind = 0, bar_pred = 0, bar_result = 0;
  int op = 0, arg = 0, width = 32;
  unsigned mask = 0;
  unsigned long long val = 0, res = 0;
  std::vector<Copy> cp;          // cp.async copies not yet waited for
  std::vector<size_t> cp_groups;  // end index in `cp` of each committed group, oldest first
};

struct Group { unsigned mask, arrived; int op; const char* file; int line; };

struct Launch {
  const kcpu_cfg* cfg = nullptr;
  void (*thunk)(void**) = nullptr;
  void** argv = nullptr;
  std::vector<Fiber> fibers;
  std::vector<unsigned> order;
  std::vector<std::vector<Group>> groups;  // open warp collectives, per warp
  unsigned n = 0, alive = 0, at_bar = 0, cursor = 0;
  Fiber* cur = nullptr;
  void* main_sp = nullptr;
  const void* main_bottom = nullptr;
  size_t main_size = 0;
  bool failed = false;
  std::string err;
  // shared-memory poisoning
  char* tls_lo = nullptr;
  size_t tls_size = 0;
  std::vector<kcpu_region> dyn;
  // fault catching
  sigjmp_buf jb;
  pthread_t thread;
  volatile sig_atomic_t running = 0;
  struct sigaction old_sa[4];
};

Launch g;
std::vector<char*> stack_pool;  // mmap'd [guard page | stack], reused across launches
size_t pool_stack_size = 0;
const int kSignals[4] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string who(const Fiber* f) {
  return fmt("thread (%u,%u,%u) of block (%u,%u,%u)", f->tid.x, f->tid.y, f->tid.z,
             kcpu_blockIdx.x, kcpu_blockIdx.y, kcpu_blockIdx.z);
}

// ---- switching ---------------------------------------------------------------------------------
void resume(Fiber* f) {
  g.cur = f;
  kcpu_threadIdx = f->tid;
#ifdef __SANITIZE_ADDRESS__
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f->stack_lo, f->stack_size);
  kcpu_switch(&g.main_sp, f->sp);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
  kcpu_switch(&g.main_sp, f->sp);
#endif
  g.cur = nullptr;
}

void yield(Fiber* f, bool dying) {
#ifdef __SANITIZE_ADDRESS__
  __sanitizer_start_switch_fiber(dying ? nullptr : &f->asan_fake, g.main_bottom, g.main_size);
  kcpu_switch(&f->sp, g.main_sp);
  __sanitizer_finish_switch_fiber(f->asan_fake, nullptr, nullptr);
#else
  (void)dying;
  kcpu_switch(&f->sp, g.main_sp);
#endif
}

[[noreturn]] void fail_here(const std::string& msg) {
  if (!g.failed) {
    g.failed = true;
    g.err = msg;
  }
  Fiber* f = g.cur;
  f->state = DONE;
  yield(f, true);
  __builtin_unreachable();
}

void make_runnable(Fiber* f) {
  f->state = RUN;
  g.cursor = std::min(g.cursor, f->pos);
}

}  // namespace

extern "C" __attribute__((visibility("hidden"), used)) void kcpu_fiber_main(Fiber* f) {
#ifdef __SANITIZE_ADDRESS__
  __sanitizer_finish_switch_fiber(nullptr, &g.main_bottom, &g.main_size);
#endif
  g.thunk(g.argv);
  if (!f->cp.empty())
    fail_here(fmt("%s exited with %zu cp.async copies pending (missing kc_cp_async_wait)",
                  who(f).c_str(), f->cp.size()));
  f->state = DONE;
  --g.alive;
  yield(f, true);
  __builtin_unreachable();
}

// ---- barriers ----------------------------------------------------------------------------------
namespace {
std::string site(const char* file, int line) { return fmt("%s:%d", file ? file : "?", line); }

void release_barrier() {
  const Fiber& a = g.fibers[0];
  std::map<std::string, unsigned> sites;
  int count = 0;
  for (const Fiber& f : g.fibers) {
    sites[site(f.file, f.line)] += 1;
    count += f.bar_pred;
  }
  if (sites.size() > 1) {
    std::string m = "divergent barriers in block " +
                    fmt("(%u,%u,%u):", kcpu_blockIdx.x, kcpu_blockIdx.y, kcpu_blockIdx.z);
    for (auto& [s, c] : sites) m += fmt(" %u threads wait at __syncthreads (%s);", c, s.c_str());
    m.pop_back();
    fail_here(m);
  }
  for (const Fiber& f : g.fibers)
    if (f.bar_kind != a.bar_kind)
      fail_here("mixed __syncthreads variants at " + site(a.file, a.line));
  int r = 0;
  if (a.bar_kind == KCPU_BAR_COUNT) r = count;
  if (a.bar_kind == KCPU_BAR_AND) r = count == (int)g.n;
  if (a.bar_kind == KCPU_BAR_OR) r = count > 0;
  for (Fiber& f : g.fibers) {
    f.bar_result = r;
    f.state = RUN;
  }
  g.at_bar = 0;
  g.cursor = 0;
}
}  // namespace

KCPU_EXPORT int kcpu_syncthreads(int kind, int pred, const char* file, int line) {
  Fiber* f = g.cur;
  f->state = BAR;
  f->file = file;
  f->line = line;
  f->bar_kind = kind;
  f->bar_pred = pred;
  if (++g.at_bar == g.n) release_barrier();
  yield(f, false);
  return f->bar_result;
}

// ---- warp collectives --------------------------------------------------------------------------
namespace {
unsigned warp_lanes(unsigned w) {  // lanes that exist in warp w (the last warp may be partial)
  unsigned k = std::min(32u, g.n - 32 * w);
  return k == 32 ? 0xffffffffu : ((1u << k) - 1);
}

unsigned long long compute(Fiber* base, const Group& gr, unsigned lane) {
  Fiber& f = base[lane];
  unsigned m = gr.mask;
  auto in = [&](unsigned l) { return l < 32 && ((m >> l) & 1u); };
  if (f.op >= OP_SHFL_IDX && f.op <= OP_SHFL_XOR) {
    int w = f.width;
    if (w <= 0 || w > 32 || (w & (w - 1)))
      fail_here(fmt("%s: %s at %s: width %d is not a power of two <= 32", who(&f).c_str(),
                    kOpNames[f.op], site(f.file, f.line).c_str(), w));
    unsigned lo = lane & ~(unsigned)(w - 1), hi = lo + w, src = lane;
    if (f.op == OP_SHFL_IDX) src = lo + ((unsigned)f.arg & (w - 1));
    if (f.op == OP_SHFL_UP) src = (int)lane - f.arg >= (int)lo ? lane - f.arg : lane;
    if (f.op == OP_SHFL_DOWN) src = lane + f.arg < hi ? lane + f.arg : lane;
    if (f.op == OP_SHFL_XOR) src = (lane ^ (unsigned)f.arg) < hi && (lane ^ (unsigned)f.arg) >= lo
                                       ? lane ^ (unsigned)f.arg : lane;
    if (!in(src))
      fail_here(fmt("%s at %s: lane %u of warp %u reads lane %u, which is not in mask 0x%08x "
                    "(block (%u,%u,%u))", kOpNames[f.op], site(f.file, f.line).c_str(), lane,
                    f.warp, src, m, kcpu_blockIdx.x, kcpu_blockIdx.y, kcpu_blockIdx.z));
    return base[src].val;
  }
  unsigned long long acc = 0;
  bool first = true;
  for (unsigned l = 0; l < 32; ++l) {
    if (!in(l)) continue;
    unsigned long long v = base[l].val;
    unsigned u = (unsigned)v;
    int s = (int)u;
    switch (f.op) {
      case OP_BALLOT: acc |= (unsigned long long)(v != 0) << l; break;
      case OP_ANY: acc |= v != 0; break;
      case OP_ALL: acc = first ? (v != 0) : (acc && v != 0); break;
      case OP_RED_ADD: acc = (unsigned)(acc + u); break;
      case OP_RED_MIN: acc = first ? u : (unsigned)std::min((int)(unsigned)acc, s); break;
      case OP_RED_MAX: acc = first ? u : (unsigned)std::max((int)(unsigned)acc, s); break;
      case OP_RED_UMIN: acc = first ? u : std::min((unsigned)acc, u); break;
      case OP_RED_UMAX: acc = first ? u : std::max((unsigned)acc, u); break;
      case OP_RED_AND: acc = first ? u : (acc & u); break;
      case OP_RED_OR: acc |= u; break;
      case OP_RED_XOR: acc ^= u; break;
      case OP_MATCH_ANY: acc |= (unsigned long long)(v == f.val) << l; break;
      case OP_MATCH_ALL: acc = first ? m : (v == base[__builtin_ctz(m)].val ? acc : 0); break;
      default: break;  // OP_SYNCWARP
    }
    first = false;
  }
  return acc;
}

void complete(unsigned warp, size_t gi) {
  Group gr = g.groups[warp][gi];
  g.groups[warp].erase(g.groups[warp].begin() + gi);
  Fiber* base = &g.fibers[32 * warp];
  for (unsigned l = 0; l < 32; ++l)
    if ((gr.mask >> l) & 1u) base[l].res = compute(base, gr, l);
  for (unsigned l = 0; l < 32; ++l)
    if ((gr.mask >> l) & 1u) make_runnable(&base[l]);
}
}  // namespace

KCPU_EXPORT unsigned long long kcpu_warp(int op, unsigned mask, unsigned long long val, int arg,
                                         int width, const char* file, int line) {
  Fiber* f = g.cur;
  unsigned bit = 1u << f->lane;
  const char* name = (op >= 0 && op < OP_COUNT) ? kOpNames[op] : "warp collective";
  if (!(mask & bit))
    fail_here(fmt("%s at %s: lane %u of warp %u is not in its own mask 0x%08x (%s)", name,
                  site(file, line).c_str(), f->lane, f->warp, mask, who(f).c_str()));
  if (mask & ~warp_lanes(f->warp))
    fail_here(fmt("%s at %s: mask 0x%08x names lanes that do not exist in warp %u (block of %u "
                  "threads)", name, site(file, line).c_str(), mask, f->warp, g.n));
  std::vector<Group>& open = g.groups[f->warp];
  size_t gi = open.size();
  for (size_t i = 0; i < open.size(); ++i)
    if (open[i].mask & mask) gi = i;
  if (gi < open.size()) {
    Group& o = open[gi];
    if (o.mask != mask)
      fail_here(fmt("%s at %s: lane %u of warp %u passes mask 0x%08x while lanes of the same warp "
                    "wait in %s at %s with mask 0x%08x (block (%u,%u,%u))", name,
                    site(file, line).c_str(), f->lane, f->warp, mask, kOpNames[o.op],
                    site(o.file, o.line).c_str(), o.mask, kcpu_blockIdx.x, kcpu_blockIdx.y,
                    kcpu_blockIdx.z));
    if (o.op != op)
      fail_here(fmt("divergent warp collectives in warp %u: lane %u is in %s at %s while other "
                    "lanes are in %s at %s (block (%u,%u,%u))", f->warp, f->lane, name,
                    site(file, line).c_str(), kOpNames[o.op], site(o.file, o.line).c_str(),
                    kcpu_blockIdx.x, kcpu_blockIdx.y, kcpu_blockIdx.z));
  } else {
    open.push_back(Group{mask, 0, op, file, line});
  }
  f->state = WARP;
  f->op = op;
  f->mask = mask;
  f->val = val;
  f->arg = arg;
  f->width = width;
  f->file = file;
  f->line = line;
  open[gi].arrived |= bit;
  if (open[gi].arrived == mask) complete(f->warp, gi);
  yield(f, false);
  return f->res;
}

KCPU_EXPORT unsigned kcpu_activemask(void) {
  Fiber* base = &g.fibers[32 * g.cur->warp];
  unsigned m = 0;
  for (unsigned l = 0; l < 32 && 32 * g.cur->warp + l < g.n; ++l)
    if (base[l].state != DONE) m |= 1u << l;
  return m;
}

// ---- cp.async emulation ------------------------------------------------------------------------
// Lazy (cfg->cp_eager == 0): copies wait in a per-thread queue and happen at kc_cp_async_wait(n),
// which exposes a missing or short wait. Eager: they happen at issue, which exposes a
// write-after-read race on a buffer being refilled. Both keep the bookkeeping, so copies still
// pending when a thread exits are caught under either.
namespace {
void do_copy(Copy& c) {
  if (c.done) return;
  std::memcpy(c.dst, c.src, c.src_bytes);
  if (c.bytes > c.src_bytes) std::memset((char*)c.dst + c.src_bytes, 0, c.bytes - c.src_bytes);
  c.done = true;
}
}  // namespace

KCPU_EXPORT void kcpu_cp_async(void* dst, const void* src, int bytes, int src_bytes) {
  Fiber* f = g.cur;
  if (src_bytes < 0 || src_bytes > bytes)
    fail_here(fmt("%s: cp.async src size %d outside [0, %d]", who(f).c_str(), src_bytes, bytes));
  if (((uintptr_t)dst | (uintptr_t)src) % (unsigned)bytes)
    fail_here(fmt("%s: cp.async of %d bytes with misaligned address (dst %p, src %p)",
                  who(f).c_str(), bytes, dst, src));
  f->cp.push_back(Copy{dst, src, bytes, src_bytes, false});
  if (g.cfg->cp_eager) do_copy(f->cp.back());
}

KCPU_EXPORT void kcpu_cp_async_commit(void) {
  Fiber* f = g.cur;
  f->cp_groups.push_back(f->cp.size());
}

KCPU_EXPORT void kcpu_cp_async_wait(int n) {
  Fiber* f = g.cur;
  size_t groups = f->cp_groups.size();
  if (n < 0) n = 0;
  if (groups <= (size_t)n) return;
  size_t upto = f->cp_groups[groups - n - 1];
  for (size_t i = 0; i < upto; ++i) do_copy(f->cp[i]);
  f->cp.erase(f->cp.begin(), f->cp.begin() + upto);
  f->cp_groups.erase(f->cp_groups.begin(), f->cp_groups.begin() + (groups - n));
  for (size_t& e : f->cp_groups) e -= upto;
}

KCPU_EXPORT void kcpu_fail(const char* file, int line, const char* f, ...) {
  char buf[768];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  if (!g.cur) {  // not inside a launch: nothing to switch back to
    fprintf(stderr, "kcpu: %s:%d: %s\n", file, line, buf);
    abort();
  }
  fail_here(fmt("%s at %s: %s", who(g.cur).c_str(), site(file, line).c_str(), buf));
}

KCPU_EXPORT long long kcpu_clock(void) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// ---- fibers, stacks, shared memory -------------------------------------------------------------
namespace {
size_t page() { return (size_t)sysconf(_SC_PAGESIZE); }

bool ensure_stacks(unsigned n, size_t size) {
  if (size != pool_stack_size) {
    for (char* p : stack_pool) munmap(p, pool_stack_size + page());
    stack_pool.clear();
    pool_stack_size = size;
  }
  while (stack_pool.size() < n) {
    void* p = mmap(nullptr, size + page(), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    mprotect(p, page(), PROT_NONE);  // guard page: a stack overflow faults instead of corrupting
    stack_pool.push_back((char*)p);
  }
  return true;
}

void prepare(Fiber& f, char* region, size_t size) {
  f.stack_lo = region + page();
  f.stack_size = size;
#ifdef __SANITIZE_ADDRESS__
  __asan_unpoison_memory_region(f.stack_lo, size);
#endif
  uintptr_t top = ((uintptr_t)f.stack_lo + size) & ~(uintptr_t)15;
  uint64_t* ret = (uint64_t*)(top - 24);  // ret slot at 8 mod 16: rsp is 16-aligned at the call
  ret[0] = (uint64_t)(void*)kcpu_fiber_entry;
  uint64_t* regs = ret - 6;  // r15 r14 r13 r12 rbx rbp (pop order)
  regs[0] = regs[1] = regs[2] = regs[3] = 0;
  regs[4] = (uint64_t)&f;  // rbx -> kcpu_fiber_main's argument
  regs[5] = 0;             // rbp = 0 ends frame-pointer backtraces
  uint32_t* ctl = (uint32_t*)(regs - 1);
  uint32_t csr;
  uint16_t cw;
  asm volatile("stmxcsr %0" : "=m"(csr));
  asm volatile("fnstcw %0" : "=m"(cw));
  ctl[0] = csr;
  ctl[1] = cw;
  f.sp = regs - 1;
}

struct TlsFind { uintptr_t addr; char* data; size_t size; bool found; };

int tls_cb(dl_phdr_info* info, size_t, void* p) {
  TlsFind* t = (TlsFind*)p;
  bool mine = false;
  size_t tls = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && t->addr >= lo && t->addr < lo + ph.p_memsz) mine = true;
    if (ph.p_type == PT_TLS) tls = ph.p_memsz;
  }
  if (!mine) return 0;
  t->found = true;
  t->data = (char*)info->dlpi_tls_data;
  t->size = info->dlpi_tls_data ? tls : 0;
  return 1;
}

// Fill static __shared__ (the kernel module's whole TLS block) and the requested dynamic bytes.
void poison() {
  if (!g.tls_lo) return;
  char* p = g.tls_lo;
  char* end = g.tls_lo + g.tls_size;
  std::vector<kcpu_region> d = g.dyn;
  std::sort(d.begin(), d.end(), [](auto& a, auto& b) { return a.ptr < b.ptr; });
  for (const kcpu_region& r : d) {
    char* lo = (char*)r.ptr;
    if (lo < p || lo >= end) continue;
    memset(p, 0xff, lo - p);
    memset(lo, 0xff, std::min<unsigned long long>(g.cfg->smem_bytes, r.bytes));
    p = lo + r.bytes;
  }
  if (p < end) memset(p, 0xff, end - p);
}

// Runs on the alternate stack. It only formats into a static buffer (no allocation: the fault may
// have happened inside malloc) and jumps back to kcpu_launch, abandoning the block's fibers.
char sig_msg[512];

void fault_handler(int sig, siginfo_t* si, void*) {
  int idx = 0;
  while (idx < 4 && kSignals[idx] != sig) ++idx;
  if (!g.running || !pthread_equal(pthread_self(), g.thread)) {
    sigaction(sig, &g.old_sa[idx], nullptr);  // not ours: let the previous handler see it
    return;
  }
  const char* what = sig == SIGSEGV ? "SIGSEGV (invalid memory access)"
                     : sig == SIGBUS ? "SIGBUS (bus error)"
                     : sig == SIGFPE ? "SIGFPE (integer division by zero or overflow)"
                                     : "SIGILL (illegal instruction)";
  int n = snprintf(sig_msg, sizeof sig_msg, "%s in ", what);
  const Fiber* f = g.cur;
  if (f)
    n += snprintf(sig_msg + n, sizeof sig_msg - n, "thread (%u,%u,%u) of block (%u,%u,%u)",
                  f->tid.x, f->tid.y, f->tid.z, kcpu_blockIdx.x, kcpu_blockIdx.y, kcpu_blockIdx.z);
  else
    n += snprintf(sig_msg + n, sizeof sig_msg - n, "the kcpu scheduler");
  if (f && (sig == SIGSEGV || sig == SIGBUS)) {
    char* a = (char*)si->si_addr;
    if (a >= f->stack_lo - page() && a < f->stack_lo)
      snprintf(sig_msg + n, sizeof sig_msg - n, " (fiber stack overflow: %zu KB per thread)",
               f->stack_size / 1024);
    else
      snprintf(sig_msg + n, sizeof sig_msg - n, " at address %p", si->si_addr);
  }
  siglongjmp(g.jb, 1);
}

std::string deadlock_report() {
  unsigned exited = 0, in_warp = 0;
  std::map<std::string, unsigned> bars;
  std::map<std::string, unsigned> warps;
  for (const Fiber& f : g.fibers) {
    if (f.state == DONE) ++exited;
    if (f.state == BAR) bars[site(f.file, f.line)] += 1;
    if (f.state == WARP) {
      ++in_warp;
      const Group* gr = nullptr;
      for (const Group& o : g.groups[f.warp])
        if (o.mask & (1u << f.lane)) gr = &o;
      unsigned missing = gr ? gr->mask & ~gr->arrived : 0;
      warps[fmt("%s at %s in warp %u with mask 0x%08x, lanes 0x%08x never arrived",
                kOpNames[f.op], site(f.file, f.line).c_str(), f.warp, f.mask, missing)] += 1;
    }
  }
  std::string m = fmt("deadlock in block (%u,%u,%u):", kcpu_blockIdx.x, kcpu_blockIdx.y,
                      kcpu_blockIdx.z);
  unsigned at_bar = 0;
  for (auto& [s, c] : bars) {
    m += fmt(" %u threads wait at __syncthreads (%s),", c, s.c_str());
    at_bar += c;
  }
  if (bars.empty()) m += " 0 threads wait at __syncthreads,";
  m += fmt(" %u in warp collectives", in_warp);
  if (!warps.empty()) {
    m += " (";
    for (auto& [s, c] : warps) m += fmt("%u: %s; ", c, s.c_str());
    m.resize(m.size() - 2);
    m += ")";
  }
  m += fmt(", %u exited", exited);
  if (bars.size() > 1) m += " (divergent barriers: threads wait at different __syncthreads)";
  else if (exited && at_bar) m += " (threads exited before a __syncthreads the others wait on)";
  return m;
}

// Run one block to completion; false on error (g.err set).
bool run_block() {
  poison();
  size_t need = g.n;
  for (unsigned i = 0; i < need; ++i) {
    Fiber& f = g.fibers[i];
    const kcpu_cfg* c = g.cfg;
    f.lin = i;
    f.tid = U3{i % c->block[0], (i / c->block[0]) % c->block[1], i / (c->block[0] * c->block[1])};
    f.lane = i % 32;
    f.warp = i / 32;
    f.state = RUN;
    f.cp.clear();
    f.cp_groups.clear();
    f.file = nullptr;
    f.line = 0;
    prepare(f, stack_pool[i], pool_stack_size);
  }
  for (auto& w : g.groups) w.clear();
  g.alive = g.n;
  g.at_bar = 0;
  g.cursor = 0;
  while (g.alive) {
    bool ran = false;
    if (g.cfg->greedy) {
      while (g.cursor < g.n && g.fibers[g.order[g.cursor]].state != RUN) ++g.cursor;
      if (g.cursor < g.n) {
        resume(&g.fibers[g.order[g.cursor]]);
        ran = true;
      }
    } else {
      for (unsigned k = 0; k < g.n && !g.failed; ++k) {
        Fiber& f = g.fibers[g.order[k]];
        if (f.state == RUN) {
          resume(&f);
          ran = true;
        }
      }
    }
    if (g.failed) return false;
    if (!ran) {
      g.failed = true;
      g.err = deadlock_report();
      return false;
    }
  }
  return true;
}

void make_order(std::vector<unsigned>& v, unsigned n, int order, std::mt19937& rng) {
  v.resize(n);
  for (unsigned i = 0; i < n; ++i) v[i] = order == 1 ? n - 1 - i : i;
  if (order == 2) std::shuffle(v.begin(), v.end(), rng);
}

void install_handlers(stack_t* old_ss) {
  static char* alt = nullptr;
  const size_t alt_size = 1 << 16;
  if (!alt) alt = (char*)mmap(nullptr, alt_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  stack_t ss{};
  ss.ss_sp = alt;
  ss.ss_size = alt_size;
  sigaltstack(&ss, old_ss);
  struct sigaction sa {};
  sa.sa_sigaction = fault_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 4; ++i) sigaction(kSignals[i], &sa, &g.old_sa[i]);
}

void remove_handlers(const stack_t* old_ss) {
  for (int i = 0; i < 4; ++i) sigaction(kSignals[i], &g.old_sa[i], nullptr);
  sigaltstack(old_ss, nullptr);
}
}  // namespace

// Run the whole grid, blocks one after another in the schedule's order. Returns 0, or 1 with the
// message in err.
KCPU_EXPORT int kcpu_launch(const kcpu_cfg* cfg, void (*thunk)(void**), void** argv,
                            const kcpu_region* dyn, int n_dyn, char* err, int errlen) {
  auto finish = [&](bool ok) {
    g.running = 0;
    g.cur = nullptr;
    if (!ok) snprintf(err, errlen, "%s", g.err.c_str());
    return ok ? 0 : 1;
  };
  g.cfg = cfg;
  g.thunk = thunk;
  g.argv = argv;
  g.failed = false;
  g.err.clear();
  g.cur = nullptr;
  unsigned bx = cfg->block[0], by = cfg->block[1], bz = cfg->block[2];
  g.n = bx * by * bz;
  if (g.n == 0 || g.n > 1024 || !cfg->grid[0] || !cfg->grid[1] || !cfg->grid[2]) {
    g.err = fmt("bad launch configuration: grid (%u,%u,%u), block (%u,%u,%u)", cfg->grid[0],
                cfg->grid[1], cfg->grid[2], bx, by, bz);
    return finish(false);
  }
  if (cfg->smem_bytes > 0 && n_dyn == 0) {
    g.err = fmt("smem_bytes=%llu but the kernel declares no extern __shared__ array", cfg->smem_bytes);
    return finish(false);
  }
  for (int i = 0; i < n_dyn; ++i)
    if (cfg->smem_bytes > dyn[i].bytes) {
      g.err = fmt("smem_bytes=%llu exceeds the %llu bytes of dynamic shared memory", cfg->smem_bytes,
                  dyn[i].bytes);
      return finish(false);
    }
  size_t stack = (size_t)(cfg->stack_kb ? cfg->stack_kb : 64) * 1024;
  if (!ensure_stacks(g.n, stack)) {
    g.err = "mmap of fiber stacks failed";
    return finish(false);
  }
  g.fibers.resize(g.n);
  g.groups.assign((g.n + 31) / 32, {});
  kcpu_blockDim = U3{bx, by, bz};
  kcpu_gridDim = U3{cfg->grid[0], cfg->grid[1], cfg->grid[2]};
  g.dyn.assign(dyn, dyn + n_dyn);
  TlsFind t{(uintptr_t)(void*)thunk, nullptr, 0, false};
  dl_iterate_phdr(tls_cb, &t);
  g.tls_lo = t.data;
  g.tls_size = t.size;

  std::mt19937 rng(cfg->seed);
  make_order(g.order, g.n, cfg->order, rng);
  for (unsigned k = 0; k < g.n; ++k) g.fibers[g.order[k]].pos = k;
  unsigned long long nblocks = (unsigned long long)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
  std::vector<unsigned> border;  // only for rnd; fwd and rev need no table
  if (cfg->order == 2 && nblocks <= (1u << 24)) make_order(border, (unsigned)nblocks, 2, rng);

  stack_t old_ss{};
  if (cfg->catch_signals) {
    install_handlers(&old_ss);
    g.thread = pthread_self();
    if (sigsetjmp(g.jb, 1)) {
      remove_handlers(&old_ss);
      g.failed = true;
      g.err = sig_msg;
      return finish(false);
    }
    g.running = 1;
  }
  bool ok = true;
  for (unsigned long long k = 0; k < nblocks && ok; ++k) {
    unsigned long long b = !border.empty() ? border[k] : cfg->order == 1 ? nblocks - 1 - k : k;
    kcpu_blockIdx = U3{(unsigned)(b % cfg->grid[0]), (unsigned)(b / cfg->grid[0] % cfg->grid[1]),
                       (unsigned)(b / ((unsigned long long)cfg->grid[0] * cfg->grid[1]))};
    ok = run_block();
  }
  g.running = 0;
  if (cfg->catch_signals) remove_handlers(&old_ss);
  return finish(ok);
}

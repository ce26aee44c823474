//go:build cuda

// emu.cpp: a CPU emulator for the kernels in ../kernels, so that the CUDA
// backend's code runs (slowly) and is tested on machines without a GPU.
//
// A launch runs the grid's blocks one after another. A kernel that never
// synchronizes runs its threads as plain calls; one that does runs them as
// fibers (own stacks, switched by a few lines of assembly on x86-64,
// ucontext elsewhere) that yield only at barriers: each round resumes every
// live fiber once, so a barrier releases when all have reached it.
// Shared memory is `static thread_local` (compat.h), shared by the fibers
// of the one block running on this OS thread.
#include "emu.h"

// No contraction of a*b+c into an FMA (cgo does not accept
// -ffp-contract=off), so the kernels round like the Go references.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#define TANDEM_EMU 1
#include "../kernels/all.cu"

namespace {

// ---- fibers ----------------------------------------------------------------

const size_t kStackBytes = 64 << 10;

#if defined(__x86_64__)
extern "C" void tandem_emu_switch(void** save_sp, void* load_sp);
asm(R"(
.text
.globl tandem_emu_switch
.type tandem_emu_switch, @function
tandem_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size tandem_emu_switch, .-tandem_emu_switch
)");
struct Context {
  void* sp = nullptr;
};
#else
#include <ucontext.h>
struct Context {
  ucontext_t uc;
};
#endif

struct Launch;

struct Fiber {
  Context ctx;
  char* stack = nullptr;
  tandem_emu_thread th;
  bool done = false;
};

struct Launch {
  void (*call)(void**) = nullptr;
  void** params = nullptr;
  Context sched;
  std::vector<Fiber> fibers;
  Fiber* running = nullptr;
  // Lane-group exchange: [threads][n] values.
  std::vector<float> xchg;
};

thread_local Launch* cur = nullptr;
thread_local tandem_emu_thread* self = nullptr;
thread_local tandem_emu_thread plain;  // the thread of a kernel run without fibers

void switch_to(Context* from, Context* to) {
#if defined(__x86_64__)
  tandem_emu_switch(&from->sp, to->sp);
#else
  swapcontext(&from->uc, &to->uc);
#endif
}

void fiber_main() {
  Launch* l = cur;
  Fiber* f = l->running;
  l->call(l->params);
  f->done = true;
  switch_to(&f->ctx, &l->sched);
  std::abort();  // a finished fiber is never resumed
}

void init_fiber(Fiber* f) {
  if (!f->stack) f->stack = static_cast<char*>(std::malloc(kStackBytes));
#if defined(__x86_64__)
  // Stack for tandem_emu_switch's six pops and ret into fiber_main, which
  // then sees rsp % 16 == 8, as after a call.
  uintptr_t top = (reinterpret_cast<uintptr_t>(f->stack) + kStackBytes) & ~uintptr_t(15);
  void** sp = reinterpret_cast<void**>(top);
  *--sp = nullptr;                                  // fiber_main's return address (never used)
  *--sp = reinterpret_cast<void*>(&fiber_main);     // ret target
  for (int i = 0; i < 6; i++) *--sp = nullptr;      // rbp rbx r12 r13 r14 r15
  f->ctx.sp = sp;
#else
  getcontext(&f->ctx.uc);
  f->ctx.uc.uc_stack.ss_sp = f->stack;
  f->ctx.uc.uc_stack.ss_size = kStackBytes;
  f->ctx.uc.uc_link = nullptr;
  makecontext(&f->ctx.uc, fiber_main, 0);
#endif
}

}  // namespace

tandem_emu_thread* tandem_emu_self() { return self; }

void tandem_emu_sync() {
  Launch* l = cur;
  if (!l || !l->running) std::abort();  // a kernel marked no-sync synchronized
  switch_to(&l->running->ctx, &l->sched);
}

void tandem_emu_group_sum(float* v, int n, int width) {
  Launch* l = cur;
  int me = self->linear;
  size_t need = l->fibers.size() * n;
  if (l->xchg.size() < need) std::abort();  // sized at launch for 32 values
  std::memcpy(&l->xchg[me * n], v, n * sizeof(float));
  tandem_emu_sync();
  // The butterfly of shfl_xor(m) for m = width/2 … 1, replayed on the
  // group's values: same additions, same order, same rounding.
  int base = me - me % width;
  float vals[32][32];
  for (int lane = 0; lane < width; lane++)
    for (int i = 0; i < n; i++) vals[lane][i] = l->xchg[(base + lane) * n + i];
  for (int m = width / 2; m > 0; m /= 2) {
    float next[32][32];
    for (int lane = 0; lane < width; lane++)
      for (int i = 0; i < n; i++) next[lane][i] = vals[lane][i] + vals[lane ^ m][i];
    std::memcpy(vals, next, sizeof(vals));
  }
  for (int i = 0; i < n; i++) v[i] = vals[me - base][i];
  tandem_emu_sync();  // xchg is reused by the next call
}

// ---- kernel table ------------------------------------------------------------

namespace {

template <typename... A, size_t... I>
void invoke(void (*f)(A...), void** p, std::index_sequence<I...>) {
  f(*static_cast<A*>(p[I])...);
}
template <typename... A>
void invoke(void (*f)(A...), void** p) {
  invoke(f, p, std::index_sequence_for<A...>{});
}

struct Entry {
  const char* name;
  bool sync;  // uses barriers or lane-group sums
  void (*call)(void**);
};

#define K(fn, s) {#fn, s, [](void** p) { invoke(fn, p); }}
const Entry kernels[] = {
    K(tandem_dequant_rows, false),   K(tandem_rms_norm, true),          K(tandem_head_norm, true),
    K(tandem_rope, false),           K(tandem_add_bias, false),         K(tandem_silu_mul, false),
    K(tandem_reshape_and_cache, false), K(tandem_attention_g1, true),   K(tandem_attention_g2, true),
    K(tandem_attention_g4, true),    K(tandem_attention_g8, true),      K(tandem_attention_g16, true),
    K(tandem_attn_combine, false),
};
#undef K

}  // namespace

extern "C" int tandem_emu_function(const char* name) {
  for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
    if (std::strcmp(kernels[i].name, name) == 0) return (int)i + 1;
  return 0;
}

extern "C" int tandem_emu_launch(int fn, const unsigned* grid, const unsigned* block, unsigned long long* params,
                                 int num_params) {
  if (fn < 1 || fn > (int)(sizeof(kernels) / sizeof(kernels[0])) || num_params > 32) return 1;
  const Entry& e = kernels[fn - 1];
  void* ptrs[32];
  for (int i = 0; i < num_params; i++) ptrs[i] = &params[i];
  unsigned numThreads = block[0] * block[1] * block[2];
  if (numThreads == 0 || numThreads > 1024) return 2;

  Launch l;
  l.call = e.call;
  l.params = ptrs;
  Launch* saved = cur;
  cur = &l;
  tandem_dim3 g = {grid[0], grid[1], grid[2]}, b = {block[0], block[1], block[2]};
  if (e.sync) {
    l.fibers.resize(numThreads);
    l.xchg.resize((size_t)numThreads * 32);
  }
  for (unsigned bz = 0; bz < g.z; bz++)
    for (unsigned by = 0; by < g.y; by++)
      for (unsigned bx = 0; bx < g.x; bx++) {
        tandem_dim3 bi = {bx, by, bz};
        if (!e.sync) {
          for (unsigned i = 0; i < numThreads; i++) {
            plain = {{i % b.x, i / b.x % b.y, i / (b.x * b.y)}, bi, b, g, (int)i};
            self = &plain;
            l.call(l.params);
          }
          continue;
        }
        for (unsigned i = 0; i < numThreads; i++) {
          Fiber* f = &l.fibers[i];
          f->th = {{i % b.x, i / b.x % b.y, i / (b.x * b.y)}, bi, b, g, (int)i};
          f->done = false;
          init_fiber(f);
        }
        for (bool live = true; live;) {
          live = false;
          for (auto& f : l.fibers) {
            if (f.done) continue;
            l.running = &f;
            self = &f.th;
            switch_to(&l.sched, &f.ctx);
            live |= !f.done;
          }
          l.running = nullptr;
        }
      }
  for (auto& f : l.fibers) std::free(f.stack);
  cur = saved;
  self = nullptr;
  return 0;
}

// ---- GEMM ------------------------------------------------------------------

namespace {
inline float bf(const unsigned short* p, long long i) {
  unsigned u = (unsigned)p[i] << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

// tandem_emu_matmul: y[r][o] = Σ_k x[r][k]·w[o][k] (bf16 in, f32 sums in k
// order), stored f32 or bf16; the cuBLASLt call's semantics.
extern "C" void tandem_emu_matmul(void* y, int y_f32, const unsigned short* x, const unsigned short* w, int rows,
                                  int in, int out) {
  auto work = [&](int o0, int o1) {
    std::vector<float> xr(in);
    for (int r = 0; r < rows; r++) {
      for (int k = 0; k < in; k++) xr[k] = bf(x, (long long)r * in + k);
      for (int o = o0; o < o1; o++) {
        const unsigned short* wr = w + (long long)o * in;
        float s = 0.0f;
        for (int k = 0; k < in; k++) s += xr[k] * bf(wr, k);
        long long i = (long long)r * out + o;
        if (y_f32) {
          static_cast<float*>(y)[i] = s;
        } else {
          static_cast<unsigned short*>(y)[i] = f32_to_bf16(s);
        }
      }
    }
  };
  int numThreads = (long long)rows * in * out < (1 << 22) ? 1 : (int)std::thread::hardware_concurrency();
  if (numThreads <= 1) {
    work(0, out);
    return;
  }
  std::vector<std::thread> ts;
  int per = (out + numThreads - 1) / numThreads;
  for (int i = 0; i < numThreads; i++) {
    int o0 = i * per, o1 = o0 + per < out ? o0 + per : out;
    if (o0 < o1) ts.emplace_back(work, o0, o1);
  }
  for (auto& t : ts) t.join();
}

#version 460
// Fused optimizer steps (torch._fused_adam_ / _fused_adamw_ / _fused_sgd_): the whole update of
// every element of a list of parameter tensors, in place, in ONE dispatch per call.
//
//   OP 0  Adam    g' = g (+ wd * p);           m = b1 m + (1 - b1) g';  v = b2 v + (1 - b2) g'^2
//                 p -= (lr / bc1) * m / (sqrt(vhat) / sqrt(bc2) + eps),  bc_i = 1 - b_i^step,
//                 vhat = v, or with amsgrad vmax = max(vmax, v), vhat = vmax
//   OP 1  AdamW   as Adam, but the decay is decoupled: p -= lr * wd * p before the update
//   OP 2  SGD     g' = g (+ wd * p); with momentum: buf = first step ? g' : mu buf + (1 - damp) g',
//                 g' = nesterov ? g' + mu buf : buf;  p -= lr * g'
//   OP 5  Adagrad g' = g (+ wd * p);  sum += g'^2;  p -= clr * g' / (sqrt(sum) + eps),
//                 clr = lr / (1 + (step - 1) * lr_decay)  (state0 = sum, step as for Adam)
//   OP 3  AMP unscale (torch._amp_foreach_non_finite_check_and_unscale_): g *= inv_scale over
//         the `param` entries, found_inf = 1 when any g is inf / NaN (before scaling)
//   OP 4  AMP scale update (torch._amp_update_scale_), one invocation: scale at lr_addr,
//         growth tracker (int32) at grad_scale, growth / backoff factors in hf[0..1], growth
//         interval in `chunk`
// For ops 0..2: g = grad / grad_scale when a grad_scale tensor is given (and that unscaled
// gradient is written back to grad, as PyTorch's CUDA / CPU fused kernels do); maximize uses
// -g; when a found_inf tensor is given and holds 1, nothing is written at all (read on the
// device: no host synchronization).
//
// Multi-tensor layout: the launcher uploads (Stream::upload_params) a table
//   header   float hf[8] at +0, double hd[8] at +32 (hyperparameters, see H_* below; the
//            float64 variant reads hd, the float32 one hf)
//   entries  at +96, 64 bytes each: addresses of param, grad, state0..2, step, then numel and
//            the index of the entry's first chunk (a prefix sum over ceil(numel / CHUNK)).
// Every workgroup takes chunks (grid-stride), finds the owning tensor by binary search over
// the entries, and updates that chunk's elements with coalesced strided loops. Parameters and
// state share one dtype (a specialization constant, or the push constant when -1); the math is
// fp32 for float16 / bfloat16 / float32 (KIND 0), fp64 for float64 (KIND 3).
//
// Built per (op, kind) by tools/build_shaders.py from optim.variants.toml.
// ABI mirrored by OptimPush / the table writer in src/kernels/optim.cpp.
#extension GL_GOOGLE_include_directive : require

#ifndef KIND
#define KIND 0
#endif
#if KIND == 3
#define TVK_FLOAT64 1
#endif
#include "common.glsl"
#include "math.glsl"

#ifndef OP
#define OP 0
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int SPEC_DT = -1;

// flags
#define F_AMSGRAD 1
#define F_MAXIMIZE 2
#define F_GRAD_SCALE 4
#define F_FOUND_INF 8
#define F_LR_TENSOR 16
#define F_MOMENTUM 32
#define F_NESTEROV 64
#define F_FIRST_STEP 128

// header slots
#define H_LR 0
#define H_BETA1 1      // SGD: momentum
#define H_BETA2 2      // SGD: dampening
#define H_WD 3
#define H_EPS 4
#define H_LOG_BETA1 5  // log(beta1) (host double): bc1 = -expm1(step * log(beta1))
#define H_LOG_BETA2 6
#define H_LR_DECAY 1   // Adagrad

layout(push_constant) uniform Push {
  uint64_t table;       //  0
  uint64_t lr_addr;     //  8  float32 scalar tensor (F_LR_TENSOR)
  uint64_t grad_scale;  // 16  float32 scalar tensor (F_GRAD_SCALE)
  uint64_t found_inf;   // 24  float32 scalar tensor (F_FOUND_INF)
  int num_tensors;      // 32
  int num_chunks;       // 36
  int chunk;            // 40  elements per chunk
  int dtype;            // 44  params / state dtype
  int flags;            // 48
} pc;                   // 56 bytes (padded)

struct Entry {
  uint64_t param;
  uint64_t grad;
  uint64_t state0;  // Adam: exp_avg; SGD: momentum buffer
  uint64_t state1;  // Adam: exp_avg_sq
  uint64_t state2;  // Adam: max_exp_avg_sq (amsgrad)
  uint64_t step;    // Adam, Adagrad: float32 step count (already incremented by the optimizer)
  int numel;
  int chunk_begin;
  int pad0;
  int pad1;
};
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Entries { Entry e[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer HeaderF { float v[8]; };
#if TVK_FLOAT64
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer HeaderD { double v[8]; };
#endif

int g_dt;

T hyper(int slot) {
#if KIND == KIND_FLOAT64
  return HeaderD(pc.table + 32ul).v[slot];
#else
  return HeaderF(pc.table).v[slot];
#endif
}

bool has(int flag) { return (pc.flags & flag) != 0; }

// Index of the entry that owns chunk c: the last entry with chunk_begin <= c.
int owner_of(Entries entries, int c) {
  int lo = 0, hi = pc.num_tensors - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) >> 1;
    if (entries.e[mid].chunk_begin <= c) lo = mid; else hi = mid - 1;
  }
  return lo;
}

#if OP == 3
void main() {
  g_dt = SPEC_DT >= 0 ? SPEC_DT : pc.dtype;
  Entries entries = Entries(pc.table + 96ul);
  const T inv_scale = T(load_f32(pc.grad_scale, DT_FLOAT32, 0));
  bool found = false;
  for (int c = int(gl_WorkGroupID.x); c < pc.num_chunks; c += int(gl_NumWorkGroups.x)) {
    const Entry en = entries.e[owner_of(entries, c)];
    const int begin = (c - en.chunk_begin) * pc.chunk;
    const int end = min(begin + pc.chunk, en.numel);
    for (int i = begin + int(gl_LocalInvocationID.x); i < end; i += int(gl_WorkGroupSize.x)) {
      const T g = LOAD_T(en.param, g_dt, i);
      if (!tvk_isfinite(g)) found = true;
      STORE_T(en.param, g_dt, i, inv_scale == T(1) ? g : g * inv_scale);
    }
  }
  // Every writer stores the same value: the race is benign.
  if (found) RefF32(pc.found_inf).v = 1.0;
}
#elif OP == 4
void main() {
  if (gl_GlobalInvocationID.x != 0u) return;
  RefF32 scale = RefF32(pc.lr_addr);
  RefI32 tracker = RefI32(pc.grad_scale);
  if (RefF32(pc.found_inf).v != 0.0) {
    scale.v = scale.v * hyper(1);
    tracker.v = 0;
  } else {
    const int successful = tracker.v + 1;
    if (successful == pc.chunk) {
      const float grown = scale.v * hyper(0);
      if (tvk_isfinite(grown)) scale.v = grown;  // never grow to inf
      tracker.v = 0;
    } else {
      tracker.v = successful;
    }
  }
}
#else
void main() {
  // A skipped step (inf / NaN gradients under AMP): no invocation writes anything. Like
  // PyTorch's CPU and CUDA fused kernels, only found_inf == 1 skips (GradScaler writes 0 or 1).
  if (has(F_FOUND_INF) && load_f32(pc.found_inf, DT_FLOAT32, 0) == 1.0) return;
  g_dt = SPEC_DT >= 0 ? SPEC_DT : pc.dtype;
  Entries entries = Entries(pc.table + 96ul);

  T lr = has(F_LR_TENSOR) ? T(load_f32(pc.lr_addr, DT_FLOAT32, 0)) : hyper(H_LR);
  const T h1 = hyper(H_BETA1), h2 = hyper(H_BETA2), wd = hyper(H_WD);
  const bool scaled = has(F_GRAD_SCALE);
  const T inv_scale_src = scaled ? T(load_f32(pc.grad_scale, DT_FLOAT32, 0)) : T(1);
  const bool maximize = has(F_MAXIMIZE);

  for (int c = int(gl_WorkGroupID.x); c < pc.num_chunks; c += int(gl_NumWorkGroups.x)) {
    const int t = owner_of(entries, c);
    const Entry en = entries.e[t];
    const int begin = (c - en.chunk_begin) * pc.chunk;
    const int end = min(begin + pc.chunk, en.numel);
#if OP < 2
    const T eps = hyper(H_EPS);
    const T step = T(load_f32(en.step, DT_FLOAT32, 0));
    const T bc1 = -tvk_expm1(step * hyper(H_LOG_BETA1));
    const T bc2_sqrt = sqrt(-tvk_expm1(step * hyper(H_LOG_BETA2)));
    const T step_size = lr / bc1;
    const bool amsgrad = has(F_AMSGRAD);
#elif OP == 5
    const T eps = hyper(H_EPS);
    const T step = T(load_f32(en.step, DT_FLOAT32, 0));
    const T clr = lr / (T(1) + (step - T(1)) * hyper(H_LR_DECAY));
#else
    const bool momentum = has(F_MOMENTUM), nesterov = has(F_NESTEROV), first = has(F_FIRST_STEP);
#endif
    for (int i = begin + int(gl_LocalInvocationID.x); i < end; i += int(gl_WorkGroupSize.x)) {
      T p = LOAD_T(en.param, g_dt, i);
      T g = LOAD_T(en.grad, g_dt, i);
      if (scaled) {
        g = g / inv_scale_src;
        STORE_T(en.grad, g_dt, i, g);
      }
      if (maximize) g = -g;
#if OP < 2
      if (wd != T(0)) {
#if OP == 0
        g += p * wd;
#else
        p -= lr * wd * p;
#endif
      }
      T m = LOAD_T(en.state0, g_dt, i);
      T v = LOAD_T(en.state1, g_dt, i);
      m = h1 * m + (T(1) - h1) * g;
      v = h2 * v + (T(1) - h2) * g * g;
      T vhat = v;
      if (amsgrad) {
        T vmax = LOAD_T(en.state2, g_dt, i);
        // max() that keeps a NaN from either side, like std::max's "a < b ? b : a" on a NaN v.
        vmax = (vmax < v || tvk_isnan(v)) ? v : vmax;
        STORE_T(en.state2, g_dt, i, vmax);
        vhat = vmax;
      }
      const T denom = sqrt(vhat) / bc2_sqrt + eps;
      p -= step_size * m / denom;
      STORE_T(en.state0, g_dt, i, m);
      STORE_T(en.state1, g_dt, i, v);
#elif OP == 5
      if (wd != T(0)) g += wd * p;
      const T sum = LOAD_T(en.state0, g_dt, i) + g * g;
      STORE_T(en.state0, g_dt, i, sum);
      p -= clr * g / (sqrt(sum) + eps);
#else
      if (wd != T(0)) g += wd * p;
      if (momentum) {
        T buf = first ? g : h1 * LOAD_T(en.state0, g_dt, i) + (T(1) - h2) * g;
        STORE_T(en.state0, g_dt, i, buf);
        g = nesterov ? g + h1 * buf : buf;
      }
      p -= lr * g;
#endif
      STORE_T(en.param, g_dt, i, p);
    }
  }
}
#endif

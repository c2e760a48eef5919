// Fused RMSNorm, rotary embedding and SwiGLU (see fused_ops.h).
#include "trainer/model/fused_ops.h"

#include <algorithm>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>

#include "trainer/model/fused_kernels.h"
#include "trainer/profile/op_classify.h"

namespace shardcast::trainer {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool cpu_fp32(const at::Tensor& t) { return t.device().is_cpu() && t.scalar_type() == at::kFloat; }

struct RmsNormFn : torch::autograd::Function<RmsNormFn> {
  // x (…,D), w (D) fp32 CPU -> (…,D). Saves x (contiguous: the caller's tensor itself when it
  // is), w and rstd (N) fp32.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w, double eps) {
    const at::Tensor xc = x.contiguous(), wc = w.contiguous();
    const int64_t D = xc.size(-1), N = xc.numel() / D;
    at::Tensor y = at::empty_like(xc);                                  // (…,D)
    at::Tensor rstd = at::empty({N}, xc.options());                     // (N) fp32
    const float* xp = xc.data_ptr<float>();
    const float* wp = wc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    float* sp = rstd.data_ptr<float>();
    at::parallel_for(0, N, kNormRowsPerChunk, [&](int64_t r0, int64_t r1) {
      rms_norm_forward_rows(xp, wp, yp, sp, D, float(eps), r0, r1);
    });
    ctx->save_for_backward({xc, wc, rstd});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_USER_SCOPE(op_scope::rms_norm);
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& w = saved[1];
    const at::Tensor& rstd = saved[2];
    const at::Tensor dy = grads[0].contiguous();
    const int64_t D = x.size(-1), N = x.numel() / D;
    const int64_t chunks = (N + kNormRowsPerChunk - 1) / kNormRowsPerChunk;
    at::Tensor dx = at::empty_like(x);                                           // (…,D) fp32
    at::Tensor parts = at::zeros({std::max<int64_t>(chunks, 1), D}, x.options().dtype(at::kDouble));  // dw per chunk
    const float *gp = dy.data_ptr<float>(), *xp = x.data_ptr<float>(), *wp = w.data_ptr<float>();
    const float* sp = rstd.data_ptr<float>();
    float* dxp = dx.data_ptr<float>();
    double* pp = parts.data_ptr<double>();
    at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c)
        rms_norm_backward_rows(gp, xp, wp, sp, dxp, pp + c * D, D, c * kNormRowsPerChunk,
                               std::min(N, (c + 1) * kNormRowsPerChunk));
    });
    at::Tensor dw = at::empty({D}, w.options());
    rms_norm_sum_weight_grad(pp, chunks, D, dw.data_ptr<float>());
    return {dx, dw.view(w.sizes()), at::Tensor()};
  }
};

// Rows (b, h, t) of a (B,H,T,hd) tensor with element stride 1 along hd: the row's offset.
struct RowIndex {
  int64_t H, T, sb, sh, st;
  explicit RowIndex(at::IntArrayRef sizes, at::IntArrayRef strides)
      : H(sizes[1]), T(sizes[2]), sb(strides[0]), sh(strides[1]), st(strides[2]) {}
  int64_t t_of(int64_t r) const { return r % T; }
  int64_t offset(int64_t r) const { return (r / (H * T)) * sb + ((r / T) % H) * sh + (r % T) * st; }
};

struct RotaryFn : torch::autograd::Function<RotaryFn> {
  // x (B,H,T,hd) fp32 CPU, element stride 1 along hd; cos, sin (T,hd) -> (B,H,T,hd) contiguous.
  // Saves cos and sin, and the sizes and strides the input gradient takes.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    const at::Tensor c = cos.contiguous(), s = sin.contiguous();
    const int64_t hd = x.size(3), rows = x.numel() / hd;
    at::Tensor out = at::empty(x.sizes(), x.options());                 // (B,H,T,hd) contiguous
    const RowIndex in(x.sizes(), x.strides());
    const float *xp = x.data_ptr<float>(), *cp = c.data_ptr<float>(), *sp = s.data_ptr<float>();
    float* op = out.data_ptr<float>();
    at::parallel_for(0, rows, 64, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        rotary_forward_row(xp + in.offset(r), cp + in.t_of(r) * hd, sp + in.t_of(r) * hd, op + r * hd, hd);
    });
    ctx->save_for_backward({c, s});
    ctx->saved_data["sizes"] = x.sizes().vec();
    ctx->saved_data["strides"] = x.is_non_overlapping_and_dense() ? x.strides().vec() : out.strides().vec();
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_USER_SCOPE(op_scope::rope);
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& c = saved[0];
    const at::Tensor& s = saved[1];
    const std::vector<int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
    const std::vector<int64_t> strides = ctx->saved_data["strides"].toIntVector();
    const at::Tensor g = grads[0].stride(3) == 1 ? grads[0] : grads[0].contiguous();
    at::Tensor dx = at::empty_strided(sizes, strides, g.options());    // the input's layout
    const int64_t hd = sizes[3], rows = dx.numel() / hd;
    const RowIndex gi(g.sizes(), g.strides()), di(dx.sizes(), dx.strides());
    const float *gp = g.data_ptr<float>(), *cp = c.data_ptr<float>(), *sp = s.data_ptr<float>();
    float* dp = dx.data_ptr<float>();
    at::parallel_for(0, rows, 64, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        rotary_backward_row(gp + gi.offset(r), cp + gi.t_of(r) * hd, sp + gi.t_of(r) * hd, dp + di.offset(r), hd);
    });
    return {dx, at::Tensor(), at::Tensor()};
  }
};

// Elements per parallel_for grain of the SwiGLU loops.
constexpr int64_t kSwigluGrain = 16384;

struct SwigluFn : torch::autograd::Function<SwigluFn> {
  // gate, up (…,F) fp32 CPU, one shape -> (…,F). Saves gate and up (contiguous: the GEMMs'
  // outputs themselves).
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate, const at::Tensor& up) {
    const at::Tensor g = gate.contiguous(), u = up.contiguous();
    at::Tensor h = at::empty_like(g);                                   // (…,F)
    const float *gp = g.data_ptr<float>(), *up_ = u.data_ptr<float>();
    float* hp = h.data_ptr<float>();
    at::parallel_for(0, g.numel(), kSwigluGrain, [&](int64_t i0, int64_t i1) { swiglu_forward(gp, up_, hp, i0, i1); });
    ctx->save_for_backward({g, u});
    return h;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_USER_SCOPE(op_scope::swiglu);
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& g = saved[0];
    const at::Tensor& u = saved[1];
    const at::Tensor dh = grads[0].contiguous();
    at::Tensor dg = at::empty_like(g), du = at::empty_like(u);          // (…,F) fp32
    const float *dhp = dh.data_ptr<float>(), *gp = g.data_ptr<float>(), *up_ = u.data_ptr<float>();
    float *dgp = dg.data_ptr<float>(), *dup = du.data_ptr<float>();
    at::parallel_for(0, g.numel(), kSwigluGrain,
                     [&](int64_t i0, int64_t i1) { swiglu_backward(dhp, gp, up_, dgp, dup, i0, i1); });
    return {dg, du};
  }
};

}  // namespace

// RMSNorm in fp32, result in x's dtype (as HF LlamaRMSNorm).
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  RECORD_USER_SCOPE(op_scope::rms_norm);  // the op profile's `norm` (trainer/profile/)
  auto xf = x.to(at::kFloat);
  auto y = xf * at::rsqrt(xf.pow(2).mean({-1}, /*keepdim=*/true) + eps);
  return w * y.to(x.scalar_type());
}

at::Tensor fused_rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  // (rms_norm opens the op profile's `norm` scope itself.)
  if (!cpu_fp32(x) || !cpu_fp32(w) || w.numel() != x.size(-1) || x.numel() == 0) return rms_norm(x, w, eps);
  RECORD_USER_SCOPE(op_scope::rms_norm);  // the op profile's `norm` (trainer/profile/)
  return RmsNormFn::apply(x, w, eps);
}

at::Tensor rotary_reference(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const auto halves = x.chunk(2, -1);
  return x * cos + at::cat({-halves[1], halves[0]}, -1) * sin;
}

at::Tensor fused_rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const bool fast = cpu_fp32(x) && cpu_fp32(cos) && cpu_fp32(sin) && x.dim() == 4 && x.numel() > 0 &&
                    x.size(3) % 2 == 0 && x.stride(3) == 1 && cos.sizes() == sin.sizes() && cos.dim() == 2 &&
                    cos.size(0) == x.size(2) && cos.size(1) == x.size(3) && !cos.requires_grad() &&
                    !sin.requires_grad();
  return fast ? RotaryFn::apply(x, cos, sin) : rotary_reference(x, cos, sin);
}

at::Tensor swiglu_reference(const at::Tensor& gate, const at::Tensor& up) { return at::silu(gate) * up; }

at::Tensor fused_swiglu(const at::Tensor& gate, const at::Tensor& up) {
  if (!cpu_fp32(gate) || !cpu_fp32(up) || gate.sizes() != up.sizes() || gate.numel() == 0)
    return swiglu_reference(gate, up);
  RECORD_USER_SCOPE(op_scope::swiglu);  // the op profile's `elementwise` (trainer/profile/)
  return SwigluFn::apply(gate, up);
}

}  // namespace shardcast::trainer

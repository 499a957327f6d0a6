#include "policies/action_head.h"

#include <torch/torch.h>

#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace rlvla3 {
namespace {

// The space's per-dimension low and high as float32 [A] on `like`'s device.
at::Tensor Row(const std::vector<double>& v, const at::Tensor& like) {
  return torch::tensor(v, torch::kDouble)
      .to(like.device(), torch::kFloat)
      .view({1, 1, -1});
}

// Bins of any count per dimension. When every dimension has the same count
// the logits are one [B, K, A, bins] tensor (TinyVLA's layout); otherwise
// each dimension's slice is handled on its own.
class BinsHead final : public ActionHead {
 public:
  explicit BinsHead(ActionSpace s) : ActionHead(std::move(s)) {
    const std::vector<int64_t>& bins = space().bins;
    width_ = std::accumulate(bins.begin(), bins.end(), int64_t{0});
    uniform_ = std::all_of(bins.begin(), bins.end(),
                           [&](int64_t b) { return b == bins.front(); });
  }
  int64_t width() const override { return width_; }

  void Sample(const at::Tensor& params, bool greedy, at::Tensor* taken,
              at::Tensor* log_probs) const override {
    torch::NoGradGuard no_grad;
    std::vector<at::Tensor> dims;
    ForEachDim(params, [&](const at::Tensor& logits, int64_t) {
      at::Tensor t;
      if (greedy) {
        t = logits.argmax(-1);
      } else {
        const at::Tensor probs = torch::softmax(logits.to(torch::kFloat), -1);
        t = torch::multinomial(probs.reshape({-1, probs.size(-1)}), 1)
                .view(logits.sizes().slice(0, logits.dim() - 1));
      }
      dims.push_back(t);
    });
    *taken = uniform_ ? dims.front() : torch::stack(dims, -1);
    Evaluate(params, *taken, log_probs, nullptr);
  }

  void Evaluate(const at::Tensor& params, const at::Tensor& taken_in,
                at::Tensor* log_probs, at::Tensor* entropy) const override {
    // Bins that travelled as float32 (counts above 256) are whole numbers.
    const at::Tensor taken =
        taken_in.is_floating_point() ? taken_in.to(torch::kLong) : taken_in;
    at::Tensor logp_sum, ent_sum;
    ForEachDim(params, [&](const at::Tensor& logits, int64_t d) {
      const at::Tensor logp = torch::log_softmax(logits.to(torch::kFloat), -1);
      const at::Tensor t = uniform_ ? taken : taken.select(-1, d);
      at::Tensor lp = logp.gather(-1, t.unsqueeze(-1)).squeeze(-1);
      at::Tensor en = -(logp.exp() * logp).sum(-1);
      if (uniform_) {  // [B, K, A]: sum over the dimensions
        lp = lp.sum(-1);
        en = en.sum(-1);
      }
      logp_sum = logp_sum.defined() ? logp_sum + lp : lp;
      ent_sum = ent_sum.defined() ? ent_sum + en : en;
    });
    if (log_probs != nullptr) *log_probs = logp_sum;
    if (entropy != nullptr) *entropy = ent_sum;
  }

  at::Tensor Temper(const at::Tensor& params,
                    double temperature) const override {
    return params / temperature;
  }

  at::Tensor ToActions(const at::Tensor& taken) const override {
    const at::Tensor low = Row(space().low, taken);
    const at::Tensor high = Row(space().high, taken);
    const at::Tensor bins = torch::tensor(space().bins, torch::kLong)
                                .to(taken.device(), torch::kFloat)
                                .view({1, 1, -1});
    return low + (taken.to(torch::kFloat) + 0.5) * (high - low) / bins;
  }

 private:
  // Calls fn(logits, d): uniform: once with [B, K, A, bins] (d = -1);
  // otherwise once per dimension with its [B, K, bins[d]] slice.
  template <typename Fn>
  void ForEachDim(const at::Tensor& params, Fn fn) const {
    const int64_t A = space().size;
    if (uniform_) {
      fn(params.reshape({params.size(0), params.size(1), A, space().bins[0]}),
         -1);
      return;
    }
    int64_t offset = 0;
    for (int64_t d = 0; d < A; ++d) {
      fn(params.narrow(-1, offset, space().bins[static_cast<size_t>(d)]), d);
      offset += space().bins[static_cast<size_t>(d)];
    }
  }

  int64_t width_ = 0;
  bool uniform_ = true;
};

class GaussianHead final : public ActionHead {
 public:
  explicit GaussianHead(ActionSpace s) : ActionHead(std::move(s)) {}
  int64_t width() const override { return 2 * space().size; }

  void Sample(const at::Tensor& params, bool greedy, at::Tensor* taken,
              at::Tensor* log_probs) const override {
    torch::NoGradGuard no_grad;
    at::Tensor mean, log_std;
    Split(params, &mean, &log_std);
    *taken =
        greedy ? mean.clone() : mean + log_std.exp() * torch::randn_like(mean);
    Evaluate(params, *taken, log_probs, nullptr);
  }

  void Evaluate(const at::Tensor& params, const at::Tensor& taken,
                at::Tensor* log_probs, at::Tensor* entropy) const override {
    at::Tensor mean, log_std;
    Split(params, &mean, &log_std);
    const double half_log_2pi = 0.5 * std::log(2.0 * M_PI);
    if (log_probs != nullptr) {
      const at::Tensor z = (taken.to(torch::kFloat) - mean) * (-log_std).exp();
      *log_probs = (-0.5 * z * z - log_std - half_log_2pi).sum(-1);
    }
    if (entropy != nullptr) {
      *entropy = (log_std + (0.5 + half_log_2pi)).sum(-1);
    }
  }

  at::Tensor Temper(const at::Tensor& params,
                    double temperature) const override {
    const int64_t A = space().size;
    return torch::cat({params.narrow(-1, 0, A),
                       params.narrow(-1, A, A) + std::log(temperature)},
                      -1);
  }

  at::Tensor ToActions(const at::Tensor& taken) const override {
    return torch::max(
        torch::min(taken.to(torch::kFloat), Row(space().high, taken)),
        Row(space().low, taken));
  }

 private:
  void Split(const at::Tensor& params, at::Tensor* mean,
             at::Tensor* log_std) const {
    const int64_t A = space().size;
    const at::Tensor p = params.to(torch::kFloat);
    *mean = p.narrow(-1, 0, A);
    *log_std = p.narrow(-1, A, A).clamp(kMinLogStd, kMaxLogStd);
  }
};

}  // namespace

at::Tensor ActionHead::ToControl(const at::Tensor& taken) const {
  const at::Tensor a = ToActions(taken);
  const at::Tensor low = Row(space().low, a);
  const at::Tensor high = Row(space().high, a);
  return ((a - low) * 2.0 / (high - low) - 1.0).clamp(-1.0, 1.0);
}

int TakenBytes(const ActionSpace& space) {
  if (space.kind == ActionKind::kGaussian) return 4;
  for (int64_t b : space.bins) {
    if (b > 256) return 4;
  }
  return 1;
}

at::Tensor ActionHead::FromControl(const at::Tensor& ctrl) const {
  const at::Tensor c = ctrl.to(torch::kFloat).clamp(-1.0, 1.0);
  const at::Tensor low = Row(space_.low, c).view({-1});
  const at::Tensor high = Row(space_.high, c).view({-1});
  const at::Tensor a = low + (c + 1.0) * 0.5 * (high - low);
  if (space_.kind == ActionKind::kGaussian) return a;
  const at::Tensor bins =
      torch::tensor(space_.bins, torch::kLong).to(c.device(), torch::kFloat);
  return torch::min(((a - low) / (high - low) * bins).floor(), bins - 1)
      .clamp_min(0)
      .to(torch::kLong);
}

absl::StatusOr<std::unique_ptr<ActionHead>> MakeActionHead(
    const ActionSpace& space) {
  if (absl::Status s = ValidateActionSpace(space, "action head"); !s.ok()) {
    return s;
  }
  if (space.kind == ActionKind::kGaussian) {
    return std::unique_ptr<ActionHead>(new GaussianHead(space));
  }
  return std::unique_ptr<ActionHead>(new BinsHead(space));
}

}  // namespace rlvla3

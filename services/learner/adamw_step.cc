#include "services/learner/adamw_step.h"

#include <torch/optim/adamw.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace rlvla3 {
namespace {

// ATen's fused AdamW kernel, with the signature it has from LibTorch 2.1.
#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define RLVLA3_HAS_FUSED_ADAMW 1
#else
#define RLVLA3_HAS_FUSED_ADAMW 0
#endif

// AdamW's state is keyed by the parameter's TensorImpl: as a string in
// LibTorch 1.13, as the pointer itself in 2.x.
template <typename Map>
typename Map::key_type StateKey(const at::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream key;  // as LibTorch 1.13 writes it (guts::to_string)
    key << p.unsafeGetTensorImpl();
    return key.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

// Parameters of one group that share a step count, with their state.
struct Bucket {
  std::vector<at::Tensor> params, grads, avgs, sqs;
};

void StepBucket(Bucket& b, const torch::optim::AdamWOptions& o, int64_t step) {
  const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
#if RLVLA3_HAS_FUSED_ADAMW
  if (b.params.front().is_cuda()) {
    // The kernel reads each parameter's step from a device tensor: views of
    // one filled tensor (a fill, no host copy).
    const std::vector<at::Tensor> steps =
        at::full({static_cast<int64_t>(b.params.size())},
                 static_cast<double>(step),
                 b.params.front().options().dtype(at::kFloat))
            .unbind(0);
    at::_fused_adamw_(b.params, b.grads, b.avgs, b.sqs, {}, steps, o.lr(),
                      beta1, beta2, o.weight_decay(), o.eps(),
                      /*amsgrad=*/false, /*maximize=*/false);
    return;
  }
#endif
  // AdamW::step's arithmetic, operation for operation, over the lists.
  if (o.weight_decay() != 0) {
    at::_foreach_mul_(b.params, 1 - o.lr() * o.weight_decay());
  }
  const double bias1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias2 = 1 - std::pow(beta2, static_cast<double>(step));
  at::_foreach_mul_(b.avgs, beta1);
  at::_foreach_add_(b.avgs, b.grads, 1 - beta1);
  at::_foreach_mul_(b.sqs, beta2);
  at::_foreach_addcmul_(b.sqs, b.grads, b.grads, 1 - beta2);
  std::vector<at::Tensor> denom = at::_foreach_sqrt(b.sqs);
  at::_foreach_div_(denom, std::sqrt(bias2));
  at::_foreach_add_(denom, o.eps());
  at::_foreach_addcdiv_(b.params, b.avgs, denom, -o.lr() / bias1);
}

}  // namespace

torch::optim::AdamWParamState* FindAdamWState(torch::optim::AdamW& opt,
                                              const at::Tensor& p) {
  auto& state = opt.state();
  auto it = state.find(StateKey<std::decay_t<decltype(state)>>(p));
  if (it == state.end()) return nullptr;
  return static_cast<torch::optim::AdamWParamState*>(it->second.get());
}

void SetAdamWState(torch::optim::AdamW& opt, const at::Tensor& p,
                   std::unique_ptr<torch::optim::AdamWParamState> s) {
  auto& state = opt.state();
  state[StateKey<std::decay_t<decltype(state)>>(p)] = std::move(s);
}

void StepAdamW(torch::optim::AdamW& opt) {
  torch::NoGradGuard no_grad;
  for (auto& group : opt.param_groups()) {
    if (static_cast<const torch::optim::AdamWOptions&>(group.options())
            .amsgrad()) {
      opt.step();  // not ours: AdamW's own loop
      return;
    }
  }
  for (auto& group : opt.param_groups()) {
    const auto& o =
        static_cast<const torch::optim::AdamWOptions&>(group.options());
    std::map<int64_t, Bucket> by_step;  // usually one: every step the same
    for (const at::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      torch::optim::AdamWParamState* s = FindAdamWState(opt, p);
      if (s == nullptr) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        s = fresh.get();
        SetAdamWState(opt, p, std::move(fresh));
      }
      s->step(s->step() + 1);
      Bucket& b = by_step[s->step()];
      b.params.push_back(p);
      b.grads.push_back(p.grad());
      b.avgs.push_back(s->exp_avg());
      b.sqs.push_back(s->exp_avg_sq());
    }
    for (auto& [step, bucket] : by_step) StepBucket(bucket, o, step);
  }
}

void ZeroParameterGradients(std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> grads;
  grads.reserve(params.size());
  for (at::Tensor& p : params) {
    if (!p.grad().defined()) continue;
    p.mutable_grad().detach_();
    grads.push_back(p.grad());
  }
  if (!grads.empty()) at::_foreach_zero_(grads);
}

at::Tensor ClipGradNorm(const std::vector<at::Tensor>& grads, double max_norm) {
  const at::Tensor total = torch::stack(at::_foreach_norm(grads)).norm(2);
  if (max_norm > 0) {
    const at::Tensor coef = torch::clamp_max(max_norm / (total + 1e-6), 1.0);
#if RLVLA3_HAS_FUSED_ADAMW
    at::_foreach_mul_(grads, coef);  // the 0-d tensor overload (2.1+)
#else
    for (const at::Tensor& g : grads) g.mul_(coef);
#endif
  }
  return total;
}

}  // namespace rlvla3

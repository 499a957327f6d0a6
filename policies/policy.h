// File: policies/policy.h
// -----------------------------------------------------------------------------
// The one policy interface used by inference actors and the learner alike.
// Everything is batched: a PolicyInput holds B observations as tensors, and
// Act / Evaluate return per-sample tensors. Actions are action chunks of K
// steps x 7 dimensions, discretised into 256 bins per dimension (OpenVLA
// style), so log-probabilities are exact: a chunk step's log-prob is the sum
// over its 7 dimensions of the chosen bins' log-probs.
//
// Example:
//   PolicyInput in = ...;                       // B observations
//   ActResult a = policy.Act(in, /*greedy=*/false);  // no grad
//   EvalResult e = policy.Evaluate(in, a.tokens);    // with grad, for the loss
//   // e.log_probs equals a.log_probs for the same weights.
// -----------------------------------------------------------------------------
#ifndef RLVLA3_POLICIES_POLICY_H_
#define RLVLA3_POLICIES_POLICY_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace rlvla3 {

// B observations. Text is right-padded with 0 (TextTokenizer::kPad).
struct PolicyInput {
  // uint8 [B, C, H, W, 3]: the run's cameras in order (TinyVLA: agentview,
  // wrist; a declared policy: the cameras it declares, in its order).
  at::Tensor images;
  at::Tensor proprio;   // float32 [B, P]
  at::Tensor text;      // int64 [B, L] instruction token ids, 0-padded
  at::Tensor text_len;  // int64 [B] tokens per instruction (<= L)
};

struct ActResult {
  at::Tensor actions;    // float32 [B, K, 7] bin centres in [-1, 1]
  at::Tensor tokens;     // int64 [B, K, 7] bin index per dimension
  at::Tensor log_probs;  // float32 [B, K] log-prob of each chunk step (nats)
  at::Tensor values;     // float32 [B] critic estimate
  uint64_t version = 0;  // weights that produced this result
};

struct EvalResult {
  at::Tensor log_probs;  // float32 [B, K], differentiable
  at::Tensor entropy;    // float32 [B, K] summed over the 7 dimensions
  at::Tensor values;     // float32 [B], differentiable
};

class Policy {
 public:
  virtual ~Policy() = default;
  // Samples (or, if greedy, takes the most likely) action chunks; no autograd.
  virtual ActResult Act(const PolicyInput& in, bool greedy) = 0;
  // Log-probs, entropy and values of given `tokens` (int64 [B, K, 7]), with
  // autograd.
  virtual EvalResult Evaluate(const PolicyInput& in,
                              const at::Tensor& tokens) = 0;
  // Steps per action chunk (K).
  virtual int chunk() const = 0;
  // Version of the current weights (bumped by whoever updates them).
  virtual uint64_t version() const = 0;
};

}  // namespace rlvla3

#endif  // RLVLA3_POLICIES_POLICY_H_

#include "services/rollout/admission_gate.h"

#include <utility>

#include "runtime/steady_clock.h"

namespace rlvla3 {

AdmissionGate::AdmissionGate(int num_envs, int64_t quota,
                             int64_t max_policy_lag, Listener listener)
    : quota_(quota), max_lag_(max_policy_lag), listener_(std::move(listener)) {
  parked_unit_.assign(static_cast<size_t>(num_envs), -1);
  parked_at_ns_.assign(static_cast<size_t>(num_envs), 0);
}

int64_t AdmissionGate::Budget() const {
  return (static_cast<int64_t>(version_) + 1 + max_lag_ + topped_up_) * quota_;
}

bool AdmissionGate::TryAdmit(int env, int64_t unit) {
  std::lock_guard<std::mutex> lock(mu_);
  if (unit < Budget()) return true;
  parked_unit_[static_cast<size_t>(env)] = unit;
  parked_at_ns_[static_cast<size_t>(env)] = SteadyNowNs();
  ++parked_count_;
  ++parks_;
  if (listener_) listener_(absl::MakeConstSpan(&env, 1), true);
  return false;
}

std::vector<int> AdmissionGate::AdmitParked(int64_t* parked_ns) {
  std::vector<int> out;
  const int64_t budget = Budget();
  const int64_t now = SteadyNowNs();
  for (size_t e = 0; e < parked_unit_.size(); ++e) {
    if (parked_unit_[e] >= 0 && parked_unit_[e] < budget) {
      parked_unit_[e] = -1;
      --parked_count_;
      if (parked_ns != nullptr) *parked_ns += now - parked_at_ns_[e];
      out.push_back(static_cast<int>(e));
    }
  }
  if (listener_ && !out.empty()) listener_(out, false);
  return out;
}

std::vector<int> AdmissionGate::Advance(uint64_t version, int64_t* parked_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (version > version_) version_ = version;
  return AdmitParked(parked_ns);
}

std::vector<int> AdmissionGate::TopUp(int64_t quotas, int64_t* parked_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (quotas > 0) topped_up_ += quotas;
  return AdmitParked(parked_ns);
}

std::vector<int> AdmissionGate::TopUpIfStarved(uint64_t incarnation,
                                               uint64_t starved,
                                               int64_t* parked_ns) {
  if (!starved_.New(incarnation, starved) || parked() == 0) return {};
  return TopUp(1, parked_ns);
}

std::vector<int> AdmissionGate::ReleaseAll() {
  std::vector<int> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t e = 0; e < parked_unit_.size(); ++e) {
    if (parked_unit_[e] >= 0) {
      parked_unit_[e] = -1;
      out.push_back(static_cast<int>(e));
    }
  }
  parked_count_ = 0;
  if (listener_ && !out.empty()) listener_(out, false);
  return out;
}

int64_t AdmissionGate::budget() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Budget();
}

int64_t AdmissionGate::topped_up_quotas() const {
  std::lock_guard<std::mutex> lock(mu_);
  return topped_up_;
}

int AdmissionGate::parked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return parked_count_;
}

uint64_t AdmissionGate::parks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return parks_;
}

}  // namespace rlvla3

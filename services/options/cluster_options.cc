#include "services/options/cluster_options.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace rlvla3 {

ClusterLayout LayoutFromConfig(const ClusterConfig& c) {
  ClusterLayout l;
  const int64_t base = c.base_port;
  l.learner = absl::StrCat(c.host, ":", base);
  for (int64_t i = 0; i < c.inference_servers; ++i) {
    l.inference.push_back(absl::StrCat(c.host, ":", base + 1 + i));
  }
  for (int64_t w = 0; w < c.rollout_workers; ++w) {
    l.rollout.push_back(
        absl::StrCat(c.host, ":", base + 1 + c.inference_servers + w));
  }
  const int64_t after = base + c.inference_servers + c.rollout_workers;
  l.learner_ranks.push_back(l.learner);
  for (int64_t r = 1; r < c.learner_ranks; ++r) {
    l.learner_ranks.push_back(absl::StrCat(c.host, ":", after + r));
  }
  l.rendezvous_port = static_cast<int>(after + c.learner_ranks);
  return l;
}

absl::StatusOr<NetOptions> NetOptionsFromConfig(const Config& c) {
  absl::StatusOr<std::string> token =
      ReadToken(c.cluster.token_file, "RLVLA3_TOKEN");
  if (!token.ok()) return token.status();
  NetOptions n;
  n.token = *token;
  return n;
}

}  // namespace rlvla3

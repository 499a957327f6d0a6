#include "services/learner/optimizer_shards.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "services/learner/adamw_step.h"

namespace rlvla3 {
namespace {

namespace fs = std::filesystem;

std::string ShardPath(const std::string& dir, int rank, int world) {
  return absl::StrCat(dir, "/optimizer/shard-", rank, "-of-", world, ".pt");
}

// Reads an integer or double IValue `key`.
absl::StatusOr<c10::IValue> ReadValue(torch::serialize::InputArchive& a,
                                      const std::string& path,
                                      const std::string& key) {
  c10::IValue v;
  if (!a.try_read(key, v)) {
    return absl::DataLossError(absl::StrCat(path, ": no ", key));
  }
  return v;
}

// The world size the shards in DIR/optimizer were written at.
absl::StatusOr<int> ShardWorld(const std::string& dir) {
  const fs::path folder = fs::path(dir) / "optimizer";
  std::error_code ec;
  int world = 0;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    int r = 0, w = 0, end = 0;
    const std::string name = e.path().filename().string();
    // Exactly shard-R-of-W.pt (not a .tmp a crash left behind).
    if (std::sscanf(name.c_str(), "shard-%d-of-%d.pt%n", &r, &w, &end) == 2 &&
        static_cast<size_t>(end) == name.size()) {
      if (world != 0 && w != world) {
        return absl::FailedPreconditionError(
            absl::StrCat(folder.string(), ": shards of world sizes ", world,
                         " and ", w, " mixed"));
      }
      world = w;
    }
  }
  if (ec || world == 0) {
    return absl::NotFoundError(
        absl::StrCat(folder.string(), ": no optimizer shards (",
                     ec ? ec.message() : "none written", ")"));
  }
  return world;
}

// Restores the state of this rank's parameters found in one shard file.
absl::Status LoadShard(const std::string& path, torch::optim::AdamW& opt,
                       absl::Span<const at::Tensor> params,
                       absl::Span<const int> owners, int rank,
                       LearnerTrainingState* meta) {
  torch::serialize::InputArchive a;
  a.load_from(path);
  absl::StatusOr<c10::IValue> n = ReadValue(a, path, "num_params");
  if (!n.ok()) return n.status();
  absl::StatusOr<c10::IValue> version = ReadValue(a, path, "version");
  if (!version.ok()) return version.status();
  absl::StatusOr<c10::IValue> steps = ReadValue(a, path, "steps_taken");
  if (!steps.ok()) return steps.status();
  absl::StatusOr<c10::IValue> lr = ReadValue(a, path, "lr");
  if (!lr.ok()) return lr.status();
  meta->version = static_cast<uint64_t>(version->toInt());
  meta->steps_taken = steps->toInt();
  meta->lr = lr->toDouble();
  c10::IValue rng;
  if (a.try_read("rng", rng) && rng.isString()) meta->rng = rng.toStringRef();
  if (n->toInt() != static_cast<int64_t>(params.size())) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": ", n->toInt(), " parameters, this policy has ",
                     params.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (owners[i] != rank) continue;
    at::Tensor avg, avg_sq, step;
    const std::string p = absl::StrCat("p", i);
    if (!a.try_read(p + ".exp_avg", avg)) continue;  // not in this shard
    if (!a.try_read(p + ".exp_avg_sq", avg_sq) ||
        !a.try_read(p + ".step", step)) {
      return absl::DataLossError(
          absl::StrCat(path, ": parameter ", i, " incomplete"));
    }
    if (!avg.sizes().equals(params[i].sizes())) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": parameter ", i, " has shape ", c10::str(avg.sizes()),
          ", the policy's is ", c10::str(params[i].sizes())));
    }
    auto s = std::make_unique<torch::optim::AdamWParamState>();
    s->step(step.item<int64_t>());
    s->exp_avg(avg.to(params[i].options()));
    s->exp_avg_sq(avg_sq.to(params[i].options()));
    SetAdamWState(opt, params[i], std::move(s));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<int> AssignShardOwners(absl::Span<const int64_t> numels,
                                   int world_size) {
  std::vector<size_t> order(numels.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return numels[a] > numels[b]; });
  std::vector<int64_t> load(static_cast<size_t>(std::max(1, world_size)), 0);
  std::vector<int> owners(numels.size(), 0);
  for (size_t i : order) {
    const size_t r = static_cast<size_t>(
        std::min_element(load.begin(), load.end()) - load.begin());
    owners[i] = static_cast<int>(r);
    load[r] += numels[i];
  }
  return owners;
}

absl::Status SaveOptimizerShard(const std::string& dir,
                                torch::optim::AdamW& optimizer,
                                absl::Span<const at::Tensor> params,
                                absl::Span<const int> owners, int rank,
                                int world_size,
                                const LearnerTrainingState& state) {
  const std::string path = ShardPath(dir, rank, world_size);
  try {
    fs::create_directories(fs::path(dir) / "optimizer");
    torch::serialize::OutputArchive a;
    a.write("num_params", c10::IValue(static_cast<int64_t>(params.size())));
    a.write("world_size", c10::IValue(static_cast<int64_t>(world_size)));
    a.write("version", c10::IValue(static_cast<int64_t>(state.version)));
    a.write("steps_taken", c10::IValue(state.steps_taken));
    a.write("lr", c10::IValue(state.lr));
    a.write("rng", c10::IValue(state.rng));
    for (size_t i = 0; i < params.size(); ++i) {
      if (owners[i] != rank) continue;
      const torch::optim::AdamWParamState* s =
          FindAdamWState(optimizer, params[i]);
      if (s == nullptr) continue;  // never stepped
      const std::string p = absl::StrCat("p", i);
      a.write(p + ".exp_avg", s->exp_avg().cpu());
      a.write(p + ".exp_avg_sq", s->exp_avg_sq().cpu());
      a.write(p + ".step", torch::tensor(s->step(), torch::kLong));
    }
    // Whole or not at all: a crash mid-write leaves the previous shard.
    const std::string tmp = path + ".tmp";
    a.save_to(tmp);
    fs::rename(tmp, path);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("cannot write optimizer shard ", path, ": ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status MarkOptimizerShardsComplete(const std::string& dir,
                                         int world_size) {
  const std::string path = dir + "/optimizer/COMPLETE";
  std::ofstream f(path, std::ios::trunc);
  f << "shards " << world_size << "\n";
  f.close();
  if (!f) {
    return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<LearnerTrainingState> LoadOptimizerShards(
    const std::string& dir, torch::optim::AdamW& optimizer,
    absl::Span<const at::Tensor> params, absl::Span<const int> owners,
    int rank) {
  absl::StatusOr<int> world = ShardWorld(dir);
  if (!world.ok()) return world.status();
  if (!fs::exists(dir + "/optimizer/COMPLETE")) {
    return absl::FailedPreconditionError(absl::StrCat(
        dir,
        "/optimizer: incomplete (no COMPLETE mark: a rank stopped while "
        "the checkpoint was written); resume from an earlier one"));
  }
  LearnerTrainingState out, first;
  for (int r = 0; r < *world; ++r) {
    const std::string path = ShardPath(dir, r, *world);
    if (!fs::exists(path)) {
      return absl::NotFoundError(absl::StrCat(
          path, ": missing (a checkpoint of ", *world, " ranks needs all)"));
    }
    try {
      // Every shard carries the same training state.
      if (absl::Status s =
              LoadShard(path, optimizer, params, owners, rank, &out);
          !s.ok()) {
        return s;
      }
      if (r == 0) first = out;
      if (out.version != first.version) {
        return absl::FailedPreconditionError(
            absl::StrCat(path, ": version ", out.version, ", shard 0's is ",
                         first.version, " (shards of different checkpoints)"));
      }
    } catch (const std::exception& e) {
      return absl::DataLossError(
          absl::StrCat("cannot read optimizer shard ", path, ": ", e.what()));
    }
  }
  return out;
}

}  // namespace rlvla3

// The rlvla3_envs._core Python module: VecEnvCore (envs/python/vec_env_core.h)
// with numpy in and out. Batches come back as fresh numpy arrays filled by
// one copy per frame with the GIL released; waiting for envs releases it too.
// The Gymnasium-style API is rlvla3_envs/__init__.py, over this.
#include <mujoco/mujoco.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "envs/egl_context.h"
#include "envs/mujoco_errors.h"
#include "envs/python/vec_env_core.h"
#include "envs/task_file.h"

namespace py = pybind11;

namespace rlvla3 {
namespace {

// absl::Status -> the Python exception a caller would expect.
void Raise(const absl::Status& s) {
  if (s.ok()) return;
  const std::string msg(s.message());
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
      throw py::value_error(msg);
    case absl::StatusCode::kDeadlineExceeded:
      PyErr_SetString(PyExc_TimeoutError, msg.c_str());
      throw py::error_already_set();
    default:
      throw std::runtime_error(msg);
  }
}

struct MakeArgs {
  std::string tasks = "put_red_cube_in_basket";
  int num_envs = 8, num_threads = 1, task_block = 1;
  int64_t seed = 0;
  int height = 64, width = 64;
  std::vector<std::string> cameras = {"agentview", "wrist"};
  bool render = true, shaped_reward = false;
  int max_episode_steps = 0, max_sweep = 0;
  std::string render_backend = "auto", readback = "auto";
  int lp_num_threads = 0, init_first = 0, init_count = kInitStatesPerTask;
  double step_deadline_s = 0;
};

// `name` within [lo, hi] (the bounds of the config key of the same meaning,
// runtime/config.cc), or ValueError naming it.
template <typename T>
void CheckRange(const char* name, T v, T lo, T hi) {
  if (v >= lo && v <= hi) return;
  throw py::value_error(
      absl::StrCat(name, " = ", v, ": not in [", lo, ", ", hi, "]"));
}

// Every number checked before anything is built: a million envs or a
// negative horizon is a ValueError, never MuJoCo's exit or a silent default.
void CheckArgs(const MakeArgs& a) {
  CheckRange("num_envs", a.num_envs, 1, 4096);
  CheckRange("num_threads", a.num_threads, 1, 1024);
  CheckRange("task_block", a.task_block, 1, 4096);
  CheckRange<int64_t>("seed", a.seed, 0, INT64_MAX);
  CheckRange("height", a.height, 16, 1024);
  CheckRange("width", a.width, 16, 1024);
  CheckRange("max_episode_steps", a.max_episode_steps, 0, 1000000);
  CheckRange("max_sweep", a.max_sweep, 0, 4096);
  CheckRange("lp_num_threads", a.lp_num_threads, 0, 64);
  CheckRange("init_first", a.init_first, 0, INT32_MAX);
  CheckRange("init_count", a.init_count, 1, INT32_MAX);
  CheckRange("step_deadline_s", a.step_deadline_s, 0.0, 3600.0);
  if (a.cameras.empty() || a.cameras.size() > 8) {
    throw py::value_error("cameras: 1 to 8 names");
  }
}

EnvPoolOptions PoolOptions(const MakeArgs& a) {
  CheckArgs(a);
  absl::StatusOr<std::vector<TaskSpec>> tasks =
      ResolveTaskList(a.tasks, "task");
  Raise(tasks.status());
  EnvPoolOptions o;
  o.tasks = *tasks;
  o.task_block = a.task_block;
  o.num_envs = a.num_envs;
  o.num_threads = a.num_threads;
  o.seed = static_cast<uint64_t>(a.seed);
  o.env.image_height = a.height;
  o.env.image_width = a.width;
  o.env.cameras = a.cameras;
  o.env.render = a.render;
  o.env.shaped_reward = a.shaped_reward;
  o.env.max_episode_steps = a.max_episode_steps;
  o.env.init_first = a.init_first;
  o.env.init_count = a.init_count;
  std::optional<RenderBackend> backend =
      kRenderBackendNames.Parse(a.render_backend);
  if (!backend)
    throw py::value_error("unknown render_backend " + a.render_backend);
  o.env.render_backend = *backend;
  std::optional<Readback> readback = kReadbackNames.Parse(a.readback);
  if (!readback) throw py::value_error("unknown readback " + a.readback);
  o.env.readback = *readback;
  o.lp_num_threads = a.lp_num_threads;
  o.step_deadline_s = a.step_deadline_s;
  // As the engine's pool: a worker's envs stepped in one sweep.
  const int per_worker = (a.num_envs + std::max(1, a.num_threads) - 1) /
                         std::max(1, a.num_threads);
  o.max_sweep = a.max_sweep > 0 ? a.max_sweep : per_worker;
  return o;
}

std::vector<int> Ids(
    const py::array_t<int32_t, py::array::c_style | py::array::forcecast>& a) {
  if (a.ndim() != 1) throw py::value_error("env ids must be 1-D");
  return std::vector<int>(a.data(), a.data() + a.size());
}

// One call at a time per VecEnv: the call that finds another thread's in
// flight raises RuntimeError instead of racing it (docs/python.md).
class OneCaller {
 public:
  explicit OneCaller(std::mutex& mu) : lock_(mu, std::try_to_lock) {
    if (!lock_.owns_lock()) {
      throw std::runtime_error(
          "rlvla3_envs: another thread is inside this VecEnv's call; a VecEnv "
          "is used from one thread at a time");
    }
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

class PyVecEnv {
 public:
  explicit PyVecEnv(const MakeArgs& a) {
    const EnvPoolOptions o = PoolOptions(a);
    absl::StatusOr<std::unique_ptr<VecEnvCore>> core;
    {
      py::gil_scoped_release nogil;
      core = VecEnvCore::Create(o);
    }
    Raise(core.status());
    core_ = std::move(*core);
  }

  // Waits for >= min_envs ready envs; returns the batch as a dict of arrays.
  py::dict Recv(int min_envs, double timeout_s) {
    OneCaller one(mu_);
    if (!(timeout_s >= 0) || timeout_s > 1e6) {
      throw py::value_error("timeout_s: a number of seconds in [0, 1e6]");
    }
    std::vector<int> ids;
    absl::Status s;
    {
      py::gil_scoped_release nogil;
      s = core_->Recv(min_envs, absl::Seconds(timeout_s), &ids);
    }
    Raise(s);
    return Batch(ids);
  }

  void Send(const py::array_t<float, py::array::c_style | py::array::forcecast>&
                actions,
            const py::array_t<int32_t, py::array::c_style |
                                           py::array::forcecast>& env_ids,
            const py::object& init_ids) {
    OneCaller one(mu_);
    const std::vector<int> ids = Ids(env_ids);
    std::vector<int> inits;
    if (!init_ids.is_none()) {
      inits =
          Ids(init_ids.cast<py::array_t<int32_t, py::array::c_style |
                                                     py::array::forcecast>>());
    }
    absl::Status s;
    {  // `actions` stays alive: the caller's reference holds it
      py::gil_scoped_release nogil;
      s = core_->Send(ids, absl::MakeConstSpan(actions.data(), actions.size()),
                      inits);
    }
    Raise(s);
  }

  py::array_t<float> Expert(
      const py::array_t<int32_t, py::array::c_style | py::array::forcecast>&
          env_ids) {
    OneCaller one(mu_);
    const std::vector<int> ids = Ids(env_ids);
    py::array_t<float> out({static_cast<py::ssize_t>(ids.size()),
                            static_cast<py::ssize_t>(kActionDim)});
    Raise(core_->ExpertActions(ids,
                               absl::MakeSpan(out.mutable_data(), out.size())));
    return out;
  }

  std::string Instruction(int env_id) {
    OneCaller one(mu_);
    if (env_id < 0 || env_id >= core_->num_envs())
      throw py::value_error("env id out of range");
    return core_->instruction(env_id);
  }

  py::dict Info() const {
    const EnvPoolOptions& o = core_->options();
    py::dict d;
    d["num_envs"] = o.num_envs;
    d["num_threads"] = o.num_threads;
    d["height"] = o.env.image_height;
    d["width"] = o.env.image_width;
    d["cameras"] = o.env.cameras;
    d["render_backend"] =
        o.env.render ? kRenderBackendNames.Name(o.env.render_backend) : "none";
    d["readback"] = kReadbackNames.Name(o.env.readback);
    d["max_sweep"] = o.max_sweep;
    std::vector<std::string> tasks;
    for (int i = 0; i < o.num_envs; ++i)
      tasks.push_back(o.tasks[static_cast<size_t>(TaskOfEnv(o, i))].name);
    d["tasks"] = tasks;
    return d;
  }

  py::dict Stats() {
    OneCaller one(mu_);
    const EnvPoolStats s = core_->stats();
    py::dict d;
    d["steps"] = s.steps;
    d["resets"] = s.resets;
    d["episodes_done"] = s.episodes_done;
    d["truncations"] = s.truncations;
    d["unstable_resets"] = s.unstable_resets;
    d["invalid_actions"] = s.invalid_actions;
    d["faults"] = s.faults;
    d["step_ms_mean"] = s.step_ms.count > 0 ? s.step_ms.mean() : 0.0;
    return d;
  }

  void Close() {
    OneCaller one(mu_);
    py::gil_scoped_release nogil;
    core_->Close();
  }

 private:
  py::dict Batch(const std::vector<int>& ids) {
    const auto n = static_cast<py::ssize_t>(ids.size());
    const EnvOptions& e = core_->options().env;
    py::array_t<uint8_t> images({n, static_cast<py::ssize_t>(e.cameras.size()),
                                 static_cast<py::ssize_t>(e.image_height),
                                 static_cast<py::ssize_t>(e.image_width),
                                 py::ssize_t{3}});
    py::array_t<float> proprio({n, static_cast<py::ssize_t>(kProprioDim)});
    py::array_t<float> reward(n);
    py::array_t<bool> terminated(n), truncated(n), fault(n), invalid(n);
    py::array_t<int32_t> env_id(n), elapsed(n), init_id(n);
    py::array_t<uint64_t> episode(n);
    StateBatch b;
    b.images = images.mutable_data();
    b.proprio = proprio.mutable_data();
    b.reward = reward.mutable_data();
    b.terminated = terminated.mutable_data();
    b.truncated = truncated.mutable_data();
    b.env_id = env_id.mutable_data();
    b.elapsed_step = elapsed.mutable_data();
    b.init_id = init_id.mutable_data();
    b.episode_id = episode.mutable_data();
    b.fault = fault.mutable_data();
    b.invalid_action = invalid.mutable_data();
    {
      py::gil_scoped_release nogil;
      core_->Gather(ids, b);
    }
    py::dict d;
    d["images"] = images;
    d["proprio"] = proprio;
    d["reward"] = reward;
    d["terminated"] = terminated;
    d["truncated"] = truncated;
    d["env_id"] = env_id;
    d["elapsed_step"] = elapsed;
    d["init_id"] = init_id;
    d["episode_id"] = episode;
    d["fault"] = fault;
    d["invalid_action"] = invalid;
    return d;
  }

  std::unique_ptr<VecEnvCore> core_;
  std::mutex mu_;  // held for a call's length (OneCaller)
};

}  // namespace
}  // namespace rlvla3

namespace rlvla3 {
namespace {

void BindMakeArgs(py::module_& m) {
  py::class_<MakeArgs>(m, "MakeArgs")
      .def(py::init<>())
      .def_readwrite("tasks", &MakeArgs::tasks)
      .def_readwrite("num_envs", &MakeArgs::num_envs)
      .def_readwrite("num_threads", &MakeArgs::num_threads)
      .def_readwrite("task_block", &MakeArgs::task_block)
      .def_readwrite("seed", &MakeArgs::seed)
      .def_readwrite("height", &MakeArgs::height)
      .def_readwrite("width", &MakeArgs::width)
      .def_readwrite("cameras", &MakeArgs::cameras)
      .def_readwrite("render", &MakeArgs::render)
      .def_readwrite("shaped_reward", &MakeArgs::shaped_reward)
      .def_readwrite("max_episode_steps", &MakeArgs::max_episode_steps)
      .def_readwrite("max_sweep", &MakeArgs::max_sweep)
      .def_readwrite("render_backend", &MakeArgs::render_backend)
      .def_readwrite("readback", &MakeArgs::readback)
      .def_readwrite("lp_num_threads", &MakeArgs::lp_num_threads)
      .def_readwrite("init_first", &MakeArgs::init_first)
      .def_readwrite("init_count", &MakeArgs::init_count)
      .def_readwrite("step_deadline_s", &MakeArgs::step_deadline_s);
}

void BindVecEnv(py::module_& m) {
  py::class_<PyVecEnv>(m, "VecEnvCore")
      .def(py::init<const MakeArgs&>(), py::arg("args"))
      .def("recv", &PyVecEnv::Recv, py::arg("min_envs"), py::arg("timeout_s"))
      .def("send", &PyVecEnv::Send, py::arg("actions"), py::arg("env_ids"),
           py::arg("init_ids") = py::none())
      .def("expert_actions", &PyVecEnv::Expert, py::arg("env_ids"))
      .def("instruction", &PyVecEnv::Instruction, py::arg("env_id"))
      .def("info", &PyVecEnv::Info)
      .def("stats", &PyVecEnv::Stats)
      .def("close", &PyVecEnv::Close);
}

}  // namespace
}  // namespace rlvla3

PYBIND11_MODULE(_core, m) {
  m.doc() = "rl-vla3's C++ env pool (see rlvla3_envs for the Python API)";
  m.attr("ACTION_DIM") = rlvla3::kActionDim;
  m.attr("PROPRIO_DIM") = rlvla3::kProprioDim;
  m.attr("INIT_STATES_PER_TASK") = rlvla3::kInitStatesPerTask;
  m.def("builtin_tasks", [] {
    std::vector<std::string> names;
    for (const rlvla3::TaskSpec& t : rlvla3::BuiltinTaskSuite())
      names.push_back(t.name);
    return names;
  });
  // MuJoCo's fatal errors raise RuntimeError (on this thread) or become a
  // counted env fault (on a worker) instead of exiting the interpreter.
  rlvla3::InstallMujocoErrorHandlers();
  // Test hook: a MuJoCo error through MuJoCo's own mju_error.
  m.def("_raise_mujoco_error",
        [](const std::string& msg) { mju_error(msg.c_str()); });
  rlvla3::BindMakeArgs(m);
  rlvla3::BindVecEnv(m);
}

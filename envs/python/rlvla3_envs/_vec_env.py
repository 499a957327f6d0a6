"""VecEnv: the Gymnasium vector-env conventions over the C++ pool (_core)."""

import numpy as np

from . import _core
from ._spaces import Box, Dict

_INFO_KEYS = ("env_id", "elapsed_step", "init_id", "episode_id", "fault",
              "invalid_action")


class VecEnv:
    """`num_envs` envs stepped by C++ worker threads; see rlvla3_envs.make."""

    metadata = {"autoreset_mode": "next_step"}

    def __init__(self, task, num_envs, num_threads, seed, image_size, cameras,
                 render, max_episode_steps, batch_size, render_backend,
                 readback, lp_num_threads, init_states, shaped_reward,
                 task_block, step_deadline_s, timeout_s=60.0):
        a = _core.MakeArgs()
        a.tasks = task if isinstance(task, str) else ",".join(task)
        a.num_envs, a.num_threads, a.seed = int(num_envs), int(num_threads), int(seed)
        a.height, a.width = (int(v) for v in image_size)
        a.cameras = list(cameras)
        a.render, a.shaped_reward = bool(render), bool(shaped_reward)
        a.max_episode_steps = int(max_episode_steps)
        a.render_backend, a.readback = render_backend, readback
        a.lp_num_threads, a.task_block = int(lp_num_threads), int(task_block)
        a.init_first, a.init_count = (int(v) for v in init_states)
        a.step_deadline_s = float(step_deadline_s)
        if a.init_count < 1 or a.init_first < 0:
            raise ValueError("init_states must be (first >= 0, count >= 1)")
        self._core = _core.VecEnvCore(a)
        d = self._core.info()
        self.num_envs = d["num_envs"]
        self.num_threads = d["num_threads"]
        self.cameras = tuple(d["cameras"])
        self.tasks = tuple(d["tasks"])
        self.render_backend, self.readback = d["render_backend"], d["readback"]
        self.batch_size = self.num_envs if batch_size is None else int(batch_size)
        if not 1 <= self.batch_size <= self.num_envs:
            raise ValueError("batch_size must be in [1, num_envs]")
        self.timeout_s = timeout_s
        h, w = d["height"], d["width"]
        self.single_action_space = Box(-1.0, 1.0, (_core.ACTION_DIM,), np.float32)
        self.action_space = Box(-1.0, 1.0, (self.num_envs, _core.ACTION_DIM),
                                np.float32)
        self.single_observation_space = self._obs_space(h, w, ())
        self.observation_space = self._obs_space(h, w, (self.num_envs,))
        self._init = (a.init_first, a.init_count)
        self._rng = np.random.default_rng(a.seed)
        self._all = np.arange(self.num_envs, dtype=np.int32)
        # After make the pool announces every env's first state itself.
        self._initial_pending = True
        self._ready = np.zeros(self.num_envs, dtype=bool)
        self._closed = False

    def _obs_space(self, h, w, batch):
        spaces = {c: Box(0, 255, batch + (h, w, 3), np.uint8) for c in self.cameras}
        spaces["proprio"] = Box(-np.inf, np.inf, batch + (_core.PROPRIO_DIM,),
                                np.float32)
        return Dict(spaces)

    def gymnasium_spaces(self):
        """(observation_space, action_space) of one env as gymnasium.spaces
        (needs Gymnasium installed)."""
        return (self.single_observation_space.to_gymnasium(),
                self.single_action_space.to_gymnasium())

    # ---- synchronous: every env at once, in env order ----------------------

    def reset(self, seed=None, options=None):
        """Starts an episode in every env; returns (obs, info).

        seed: reseeds the draw of initial states. options={"init_ids": [...]}
        starts env i from initial state init_ids[i] (fixed evaluation sets).
        """
        init_ids = (options or {}).get("init_ids")
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._drain()
        if not (seed is None and init_ids is None and self._fresh):
            self._send_reset(self._all, init_ids)
            self._recv_all()
        self._fresh = False
        obs, _, _, _, info = self._last
        return obs, info

    def step(self, actions):
        """One step of every env: (obs, reward, terminated, truncated, info)."""
        if not self._ready.all():
            raise RuntimeError("step: call reset() first (or recv() the envs "
                               "in flight)")
        self.send(actions, self._all)
        return self._recv_all()

    # ---- asynchronous, EnvPool style ----------------------------------------

    def async_reset(self):
        """Starts an episode in every env; their states come from recv()."""
        self._fresh = False
        if self._initial_pending:
            return
        self._drain()
        self._send_reset(self._all, None)

    def send(self, actions, env_id=None):
        """Queues one action per env of `env_id` (default: every env)."""
        ids = self._all if env_id is None else np.asarray(env_id, dtype=np.int32).reshape(-1)
        actions = np.ascontiguousarray(actions, dtype=np.float32)
        if actions.shape != (len(ids), _core.ACTION_DIM):
            raise ValueError("actions of shape {} for {} envs: need ({}, {})".format(
                actions.shape, len(ids), len(ids), _core.ACTION_DIM))
        self._check_ready(ids, "send")
        self._core.send(actions, ids)
        self._ready[ids] = False

    def recv(self, min_envs=None, timeout=None):
        """The envs ready now (at least min_envs, default batch_size), in the
        order they became ready: (obs, reward, terminated, truncated, info);
        info["env_id"] says which."""
        n = self.batch_size if min_envs is None else int(min_envs)
        batch = self._core.recv(n, self.timeout_s if timeout is None else timeout)
        self._initial_pending = False
        self._ready[batch["env_id"]] = True
        return self._wrap(batch)

    # ---- experts and task facts ---------------------------------------------

    def expert_actions(self, env_id=None):
        """The scripted experts' actions [n, 7] for ready envs (default: every
        env). Call once per step of each env: a script follows its episode."""
        ids = self._all if env_id is None else np.asarray(env_id, dtype=np.int32).reshape(-1)
        self._check_ready(ids, "expert_actions")
        return self._core.expert_actions(ids)

    @property
    def instructions(self):
        """Each env's task instruction."""
        return [self._core.instruction(i) for i in range(self.num_envs)]

    def stats(self):
        """The pool's counters: steps, resets, truncations, faults, ..."""
        return self._core.stats()

    def close(self):
        if not self._closed:
            self._closed = True
            self._core.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to close
            pass

    # ---- internals ------------------------------------------------------------

    _fresh = True  # no reset or step yet: the initial states are the reset's
    _last = None

    def _check_ready(self, ids, what):
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_envs):
            raise ValueError("{}: env ids must be in [0, {})".format(what, self.num_envs))
        if self._initial_pending or not self._ready[ids].all():
            raise RuntimeError("{}: env(s) {} have no state to act on (recv() "
                               "them first)".format(what, ids[~self._ready[ids]].tolist()))

    def _drain(self):
        """Waits for the envs in flight (and the initial states)."""
        self._recv_all()
        self._initial_pending = False

    def _send_reset(self, ids, init_ids):
        first, count = self._init
        if init_ids is None:
            init_ids = self._rng.integers(first, first + count, len(ids))
        init_ids = np.asarray(init_ids, dtype=np.int32).reshape(-1)
        if init_ids.shape != ids.shape:
            raise ValueError("init_ids: one per env ({})".format(len(ids)))
        zeros = np.zeros((len(ids), _core.ACTION_DIM), dtype=np.float32)
        self._core.send(zeros, ids, init_ids)
        self._ready[ids] = False

    def _recv_all(self):
        """Receives every env not ready yet; the last batch, in env order."""
        while not self._ready.all():
            self._last = self._wrap_sorted(
                self._core.recv(int((~self._ready).sum()), self.timeout_s))
        return self._last

    def _wrap_sorted(self, batch):
        self._ready[batch["env_id"]] = True
        if len(batch["env_id"]) == self.num_envs:
            order = np.argsort(batch["env_id"], kind="stable")
            if not np.array_equal(order, self._all):
                batch = {k: v[order] for k, v in batch.items()}
        return self._wrap(batch)

    def _wrap(self, b):
        images = b["images"]
        obs = {c: images[:, i] for i, c in enumerate(self.cameras)}
        obs["proprio"] = b["proprio"]
        info = {k: b[k] for k in _INFO_KEYS}
        info["success"] = b["terminated"].copy()
        info["images"] = images
        return obs, b["reward"], b["terminated"], b["truncated"], info

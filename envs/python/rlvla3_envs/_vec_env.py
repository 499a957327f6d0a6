"""VecEnv: the Gymnasium vector-env conventions over the C++ pool (_core)."""

import functools

import numpy as np

from . import _core
from ._gymnasium import autoreset_mode
from ._init_draws import InitDraws
from ._spaces import Box, Dict

_INFO_KEYS = ("env_id", "elapsed_step", "init_id", "episode_id", "fault",
              "invalid_action")
RESET_OPTIONS = ("init_ids",)  # reset(options=...)'s keys


def _open(method):
    """The call, or RuntimeError once the VecEnv is closed."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        if self._closed:
            raise RuntimeError("rlvla3_envs: {}: this VecEnv is closed".format(
                method.__name__.lstrip("_")))
        return method(self, *args, **kwargs)
    return call


class VecEnv:
    """`num_envs` envs stepped by C++ worker threads; see rlvla3_envs.make."""

    def __init__(self, task, num_envs, num_threads, seed, image_size, cameras,
                 render, max_episode_steps, batch_size, render_backend,
                 readback, lp_num_threads, init_states, shaped_reward,
                 task_block, step_deadline_s, timeout_s=60.0):
        self._closed = True  # until the pool exists
        a = _make_args(task, num_envs, num_threads, seed, image_size, cameras,
                       render, max_episode_steps, render_backend, readback,
                       lp_num_threads, init_states, shaped_reward, task_block,
                       step_deadline_s)
        self.timeout_s = _check_timeout(timeout_s)
        self._core = _core.VecEnvCore(a)
        self._closed = False
        self._describe(self._core.info(), a.render, batch_size)
        n = self.num_envs
        self._draws = InitDraws(n, a.seed, a.init_first, a.init_count)
        self._all = np.arange(n, dtype=np.int32)
        self._ready = np.zeros(n, dtype=bool)  # a state returned, not sent since
        self._ended = np.zeros(n, dtype=bool)  # ... and it ended its episode
        # After make the pool announces every env's first state itself.
        self._initial_pending = True
        self._last = None  # the last batch reset() received, in env order

    def _describe(self, d, render, batch_size):
        self.num_envs = d["num_envs"]
        self.num_threads = d["num_threads"]
        self.cameras = tuple(d["cameras"]) if render else ()
        self.tasks = tuple(d["tasks"])
        self.render_backend, self.readback = d["render_backend"], d["readback"]
        self.batch_size = self.num_envs if batch_size is None else int(batch_size)
        if not 1 <= self.batch_size <= self.num_envs:
            raise ValueError("batch_size must be in [1, num_envs]")
        self.metadata = {"autoreset_mode": autoreset_mode()}
        h, w, n = d["height"], d["width"], self.num_envs
        self.single_action_space = Box(-1.0, 1.0, (_core.ACTION_DIM,), np.float32)
        self.action_space = Box(-1.0, 1.0, (n, _core.ACTION_DIM), np.float32)
        self.single_observation_space = self._obs_space(h, w, ())
        self.observation_space = self._obs_space(h, w, (n,))

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

    def __len__(self):
        return self.num_envs

    # ---- synchronous: every env (or those of env_id) at once ---------------

    @_open
    def reset(self, seed=None, options=None, env_id=None):
        """Starts an episode in every env (or those of env_id, in its order);
        returns (obs, info).

        seed (an int, or one per env): reseeds the envs' draws of initial
        states, for this reset and every episode after it.
        options={"init_ids": [...]}: env i starts from initial state
        init_ids[i] (fixed evaluation sets); other keys are refused.
        """
        ids = self._ids(env_id, "reset")
        init_ids = _reset_init_ids(options, len(ids))
        self._check_others_idle(ids, "reset")
        if seed is not None:
            self._draws.reseed(ids, seed)
        keep = (self._initial_pending and env_id is None and seed is None
                and init_ids is None)  # the pool's own first states will do
        self._drain()
        if not keep:
            self._send_reset(ids, init_ids)
            self._last = self._recv_ordered(ids)
        obs, _, _, _, info = self._last
        return obs, info

    @_open
    def step(self, actions, env_id=None):
        """One step of every env (or those of env_id, in its order):
        (obs, reward, terminated, truncated, info)."""
        ids = self._ids(env_id, "step")
        if self._initial_pending or not self._ready[ids].all():
            raise RuntimeError("step: call reset() first (or recv() the envs "
                               "in flight)")
        self._check_others_idle(ids, "step")
        self.send(actions, ids)
        return self._recv_ordered(ids)

    # ---- asynchronous, EnvPool style ----------------------------------------

    @_open
    def async_reset(self):
        """Starts an episode in every env; their states come from recv()."""
        if self._initial_pending:
            return
        self._drain()
        self._send_reset(self._all, None)

    @_open
    def send(self, actions, env_id=None):
        """Queues one action per env of `env_id` (default: every env). An env
        whose last state ended its episode starts the next one instead, from
        an initial state of its own draws (see reset's seed)."""
        ids = self._ids(env_id, "send")
        actions = _check_actions(actions, ids)
        self._check_ready(ids, "send")
        ended = self._ended[ids]
        if not ended.any():
            self._core.send(actions, ids)
        else:  # nothing above can fail now: both sends or neither
            self._core.send(actions[ended], ids[ended],
                            self._draws.draw(ids[ended]))
            if not ended.all():
                self._core.send(actions[~ended], ids[~ended])
        self._ready[ids] = False

    @_open
    def recv(self, min_envs=None, timeout=None):
        """The envs ready now (at least min_envs, default batch_size), in the
        order they became ready: (obs, reward, terminated, truncated, info);
        info["env_id"] says which. min_envs above the envs in flight is a
        RuntimeError at once; waiting past `timeout` seconds (default
        make's timeout_s) a TimeoutError."""
        n = self.batch_size if min_envs is None else int(min_envs)
        self._check_in_flight(n)
        batch = self._core.recv(n, self.timeout_s if timeout is None else timeout)
        self._initial_pending = False
        return self._wrap(self._took(batch))

    # ---- experts and task facts ---------------------------------------------

    @_open
    def expert_actions(self, env_id=None):
        """The scripted experts' actions [n, 7] for ready envs (default: every
        env). Call once per step of each env: a script follows its episode."""
        ids = self._ids(env_id, "expert_actions")
        self._check_ready(ids, "expert_actions")
        return self._core.expert_actions(ids)

    @property
    @_open
    def instructions(self):
        """Each env's task instruction."""
        return [self._core.instruction(i) for i in range(self.num_envs)]

    @_open
    def stats(self):
        """The pool's counters: steps, resets, truncations, faults, ..."""
        return self._core.stats()

    def close(self):
        """Stops the workers; any later call but close() is a RuntimeError."""
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

    def _ids(self, env_id, what):
        """env_id as distinct int32 ids in [0, num_envs) (None: every env)."""
        if env_id is None:
            return self._all
        ids = np.asarray(env_id).reshape(-1)
        if ids.size and ids.dtype.kind not in "iu":
            raise ValueError("{}: env ids must be integers".format(what))
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_envs):
            raise ValueError("{}: env ids must be in [0, {})".format(what, self.num_envs))
        ids = ids.astype(np.int32)
        twice = _first_repeat(ids, self.num_envs)
        if twice is not None:
            raise ValueError("{}: env id {} is listed twice: one per env".format(
                what, twice))
        return ids

    def _check_ready(self, ids, what):
        if self._initial_pending or not self._ready[ids].all():
            raise RuntimeError("{}: env(s) {} have no state to act on (recv() "
                               "them first)".format(what, ids[~self._ready[ids]].tolist()))

    def _check_others_idle(self, ids, what):
        """A partial call receives its envs only: none other may be in flight."""
        if self._initial_pending:
            return  # the first states: drained, as a full reset does
        others = ~self._ready
        others[ids] = False
        if others.any():
            raise RuntimeError("{}(env_id=...): env(s) {} are in flight; recv() "
                               "them first".format(what, self._all[others].tolist()))

    def _check_in_flight(self, n):
        flying = int(np.count_nonzero(~self._ready))
        if n < 0:
            raise ValueError("recv: min_envs = {} is negative".format(n))
        if n > flying:
            raise RuntimeError(
                "recv: min_envs = {} but {} env(s) in flight (sent or reset, not "
                "received yet): send() to more envs, or ask for fewer".format(
                    n, flying))

    def _drain(self):
        """Receives the envs in flight (and the initial states), in env order."""
        flying = self._all[~self._ready]
        if flying.size:
            self._last = self._recv_ordered(flying)
        self._initial_pending = False

    def _send_reset(self, ids, init_ids):
        if init_ids is None:
            init_ids = self._draws.draw(ids)
        zeros = np.zeros((len(ids), _core.ACTION_DIM), dtype=np.float32)
        self._core.send(zeros, ids, init_ids)
        self._ready[ids] = False

    def _recv_ordered(self, ids):
        """Receives envs `ids` (exactly the envs in flight), in ids' order."""
        batch = self._took(self._core.recv(len(ids), self.timeout_s))
        got = batch["env_id"]
        if not np.array_equal(got, ids):
            pos = np.full(self.num_envs, len(ids), dtype=np.intp)
            pos[ids] = np.arange(len(ids))
            order = np.argsort(pos[got], kind="stable")
            batch = {k: v[order] for k, v in batch.items()}
        return self._wrap(batch)

    def _took(self, batch):
        ids = batch["env_id"]
        self._ready[ids] = True
        self._ended[ids] = batch["terminated"] | batch["truncated"]
        return batch

    def _wrap(self, b):
        obs = {c: b["images"][:, i] for i, c in enumerate(self.cameras)}
        obs["proprio"] = b["proprio"]
        info = {k: b[k] for k in _INFO_KEYS}
        info["success"] = b["terminated"].copy()
        if self.cameras:  # render=False: no images at all
            info["images"] = b["images"]
        return obs, b["reward"], b["terminated"], b["truncated"], info


def _make_args(task, num_envs, num_threads, seed, image_size, cameras, render,
               max_episode_steps, render_backend, readback, lp_num_threads,
               init_states, shaped_reward, task_block, step_deadline_s):
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
    return a


def _check_timeout(timeout_s):
    t = float(timeout_s)
    if not 0 < t <= 1e6:
        raise ValueError("timeout_s = {}: seconds in (0, 1e6]".format(timeout_s))
    return t


def _check_actions(actions, ids):
    """One finite 7-D action per id, as float32 (C order)."""
    actions = np.ascontiguousarray(actions, dtype=np.float32)
    if actions.shape != (len(ids), _core.ACTION_DIM):
        raise ValueError("actions of shape {} for {} envs: need ({}, {})".format(
            actions.shape, len(ids), len(ids), _core.ACTION_DIM))
    bad = ~np.isfinite(actions)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError("action {} of env {} is not finite".format(col, ids[row]))
    return actions


def _first_repeat(ids, num_envs):
    """The first id of `ids` listed before, or None."""
    if ids.size < 2 or np.bincount(ids, minlength=num_envs).max() < 2:
        return None
    _, first = np.unique(ids, return_index=True)
    repeat = np.ones(ids.size, dtype=bool)
    repeat[first] = False
    return int(ids[repeat.argmax()])


def _reset_init_ids(options, n):
    """options={"init_ids": ...} as n int32 initial states (or None)."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise ValueError("reset: options must be a dict, with keys among {}".format(
            list(RESET_OPTIONS)))
    unknown = [k for k in options if k not in RESET_OPTIONS]
    if unknown:
        raise ValueError("reset: unknown option(s) {}; the known ones are {}".format(
            unknown, list(RESET_OPTIONS)))
    if options.get("init_ids") is None:
        return None
    init_ids = np.asarray(options["init_ids"]).reshape(-1)
    if init_ids.dtype.kind not in "iu" or init_ids.shape != (n,):
        raise ValueError("init_ids: one int per env ({})".format(n))
    return init_ids.astype(np.int32)

"""rl-vla3's C++ env pool from Python: MuJoCo manipulation envs stepped on
worker threads, batched as a Gymnasium vector env (without needing Gymnasium).

    import numpy as np, rlvla3_envs
    envs = rlvla3_envs.make("put_red_cube_in_basket", num_envs=8, num_threads=2)
    obs, info = envs.reset(seed=0)                     # obs["agentview"]: [8, H, W, 3]
    for _ in range(100):
        actions = envs.expert_actions()                # or your policy's, [8, 7] in [-1, 1]
        obs, reward, terminated, truncated, info = envs.step(actions)
    envs.close()

Asynchronous stepping, EnvPool style: no env waits for another.

    envs.async_reset()
    while True:
        obs, reward, terminated, truncated, info = envs.recv(min_envs=4)
        envs.send(policy(obs), info["env_id"])

Episodes auto-reset on the next step (Gymnasium's "next step" mode): the step
that ends an episode returns its final observation with terminated (the goal
holds) or truncated (the horizon, unstable physics, a crashed env) set; the
action sent next to that env is ignored and the reply is the new episode's
first observation (reward 0, elapsed_step 0). Every episode after a
reset(seed=s) draws its initial state from s (env by env), so the same seed
gives the same episodes.

Observations are a dict: one uint8 [n, H, W, 3] array per camera (views into
one [n, C, H, W, 3] block, `info["images"]`) and float32 "proprio" [n, 8]
(end-effector position 3, axis-angle orientation 3, the two finger positions
2); with render=False only "proprio" (and no info["images"]). The batch
arrays are the caller's: each call returns fresh ones, filled by one copy per
frame.

EnvPool's partial calls: reset(env_id=ids) and step(actions, env_id=ids)
reset or step those envs only, returning theirs in the order of ids.
"""

from . import _core
from ._gymnasium import gymnasium_vector_env
from ._spaces import Box, Dict
from ._version import __version__

__all__ = ["make", "VecEnv", "builtin_tasks", "gymnasium_vector_env", "Box",
           "Dict", "__version__"]

ACTION_DIM = _core.ACTION_DIM
PROPRIO_DIM = _core.PROPRIO_DIM


def builtin_tasks():
    """The built-in suite's task names, in its fixed order."""
    return list(_core.builtin_tasks())


def make(task="put_red_cube_in_basket", num_envs=8, num_threads=1, seed=0,
         image_size=(64, 64), cameras=("agentview", "wrist"), render=True,
         max_episode_steps=0, batch_size=None, render_backend="auto",
         readback="auto", lp_num_threads=0, init_states=(0, 50),
         shaped_reward=False, task_block=1, step_deadline_s=0.0,
         timeout_s=60.0):
    """A VecEnv of `num_envs` envs of `task` on `num_threads` worker threads.
    Every argument has a default (docs/python.md lists them too):

    task: a built-in task name, a task file (.yaml), or a comma-separated list
        of them (env i runs task (i // task_block) % len(tasks)); "all": the
        suite. Default "put_red_cube_in_basket".
    num_envs: envs in the pool, 1 to 4096 (default 8).
    num_threads: worker threads stepping them, 1 to 1024 (default 1).
    seed: env i draws its first episode's initial state from seed + i; later
        episodes draw from seed too, until reset(seed=...) (default 0).
    image_size: (height, width) of every camera, 16 to 1024 each (default
        (64, 64)).
    cameras: the scene cameras each observation holds, in order (default
        ("agentview", "wrist")).
    render: draw the cameras (default True); False: physics only, and the
        observations hold only "proprio".
    max_episode_steps: the horizon (default 0: the task's).
    batch_size: recv()'s default min_envs, 1 to num_envs (default None: every
        env). It does not change how the worker threads step their envs.
    render_backend, readback: as the config's env.render_backend and
        env.readback (default "auto" each).
    lp_num_threads: llvmpipe threads per render, 0 to 64 (default 0: render
        on the worker thread).
    init_states: (first, count): episodes start from initial states first ..
        first + count - 1 of the task (default (0, 50)).
    shaped_reward: a shaped reward (a per-step reach penalty) instead of the
        sparse success reward (default False).
    task_block: consecutive envs per task of a task list (default 1).
    step_deadline_s: a step slower than this is a hung env's fault (default
        0.0: no deadline).
    timeout_s: how long reset, step and recv wait for envs before a
        TimeoutError (default 60.0; recv(timeout=...) overrides it per call).
    """
    return VecEnv(task=task, num_envs=num_envs, num_threads=num_threads,
                  seed=seed, image_size=image_size, cameras=cameras,
                  render=render, max_episode_steps=max_episode_steps,
                  batch_size=batch_size, render_backend=render_backend,
                  readback=readback, lp_num_threads=lp_num_threads,
                  init_states=init_states, shaped_reward=shaped_reward,
                  task_block=task_block, step_deadline_s=step_deadline_s,
                  timeout_s=timeout_s)


from ._vec_env import VecEnv  # noqa: E402  (after make's docstring names it)

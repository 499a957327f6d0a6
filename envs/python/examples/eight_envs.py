#!/usr/bin/env python3
"""Eight envs of a built-in task from Python: the scripted experts act for
200 steps (sync step), then the same envs run asynchronously with zero
actions for 5 s (send/recv); prints what came back and the frames/s of each.

    PYTHONPATH=build/envs/python /usr/bin/python3 envs/python/examples/eight_envs.py
"""

import sys
import time

import numpy as np

import rlvla3_envs


def main(task="put_red_cube_in_basket"):
    envs = rlvla3_envs.make(task, num_envs=8, num_threads=2, seed=0, image_size=(64, 64))
    print("rlvla3_envs", rlvla3_envs.__version__, "|", envs.num_envs, "envs of", task,
          "on", envs.num_threads, "threads, render", envs.render_backend)
    print("observation space:", envs.single_observation_space)
    print("action space:", envs.single_action_space)
    obs, info = envs.reset(seed=0)
    print("reset: init_id", info["init_id"].tolist(), "|", envs.instructions[0])
    successes = episodes = 0
    t0 = time.perf_counter()
    for _ in range(200):
        obs, reward, terminated, truncated, info = envs.step(envs.expert_actions())
        successes += int(terminated.sum())
        episodes += int((terminated | truncated).sum())
    sync_fps = 200 * envs.num_envs / (time.perf_counter() - t0)
    print("sync, experts: 200 steps x 8 envs, {} episodes ended, {} successes, {:.0f} frames/s "
          "(experts in the loop)".format(episodes, successes, sync_fps))
    envs.async_reset()
    zeros = np.zeros((envs.num_envs, 7), np.float32)
    frames, batches, t0 = 0, 0, time.perf_counter()
    while time.perf_counter() - t0 < 5:
        obs, reward, terminated, truncated, info = envs.recv(min_envs=1)
        ids = info["env_id"]
        envs.send(zeros[:len(ids)], ids)
        frames, batches = frames + len(ids), batches + 1
    wall = time.perf_counter() - t0
    print("async, zero actions: {:.0f} frames/s, {:.1f} envs per recv; last batch ids {}, "
          "agentview {}".format(frames / wall, frames / batches, ids.tolist(),
                                obs["agentview"].shape))
    print("pool stats:", envs.stats())
    envs.close()


if __name__ == "__main__":
    main(*sys.argv[1:])

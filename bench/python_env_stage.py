#!/usr/bin/env python3
"""The env stage from Python (rlvla3_envs) against the C++ env stage alone
(`rl-vla3 bench --env-workers`), at the same tasks, envs, worker threads,
image size and cameras, side by side. Both step zero actions, as fast as the
workers go, drawing images every step; Python loops recv(min_envs=1) ->
send(ready), the C++ bench Recv(1) -> Send(ready). Each point alternates the
two (C++, Python, C++, Python, ...) so that drift on a shared machine hits
both alike; the table gives each side's median.

    PYTHONPATH=build/envs/python /usr/bin/python3 bench/python_env_stage.py \
        --binary build/services/rl-vla3 --workers 1,2 --envs-per-worker 4
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import rlvla3_envs

TASKS = "put_red_cube_in_basket,open_the_drawer,lift_the_red_cube,put_blue_cube_in_bowl"


def cpp_point(a, workers, out_dir):
    path = os.path.join(out_dir, "env_scaling_{}.json".format(workers))
    cmd = [a.binary, "bench", "--config", a.config,
           "--env-workers", str(workers),
           "--envs-per-worker", str(a.envs_per_worker),
           "--duration", str(a.duration), "--json", path,
           "--set", "env.tasks=" + a.tasks,
           "--set", "env.image_width={}".format(a.size),
           "--set", "env.image_height={}".format(a.size),
           "--set", "rl.execute_steps=1",  # images every step, as Python's
           "--set", "run.out_dir=" + out_dir]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        p = json.load(f)["points"][0]
    return p["frames_per_s"], p["backend"], p["readback"]


def python_point(a, workers):
    envs = rlvla3_envs.make(a.tasks, num_envs=workers * a.envs_per_worker,
                            num_threads=workers, seed=0,
                            image_size=(a.size, a.size))
    envs.async_reset()
    zeros = np.zeros((envs.num_envs, 7), np.float32)
    steps0 = envs.stats()["steps"]
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < a.duration:
        obs, reward, terminated, truncated, info = envs.recv(min_envs=1)
        ids = info["env_id"]
        envs.send(zeros[:len(ids)], ids)
    wall = time.perf_counter() - t0
    frames = envs.stats()["steps"] - steps0
    backend = envs.render_backend
    envs.close()
    return frames / wall, backend


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default="build/services/rl-vla3")
    p.add_argument("--config", default="configs/bench_cpu.yaml")
    p.add_argument("--tasks", default=TASKS)
    p.add_argument("--workers", default="1,2")
    p.add_argument("--envs-per-worker", type=int, default=4)
    p.add_argument("--size", type=int, default=64, help="image height = width")
    p.add_argument("--duration", type=float, default=10.0, help="s per run")
    p.add_argument("--repeats", type=int, default=3, help="runs per side per point")
    a = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as out_dir:
        for w in (int(x) for x in a.workers.split(",")):
            cpp, py = [], []
            for _ in range(a.repeats):
                fps, backend, readback = cpp_point(a, w, out_dir)
                cpp.append(fps)
                fps, py_backend = python_point(a, w)
                py.append(fps)
            if py_backend != backend:
                sys.exit("the two sides rendered with {} and {}".format(backend, py_backend))
            rows.append((w, w * a.envs_per_worker, backend, readback,
                         statistics.median(cpp), statistics.median(py), cpp, py))
    print("env stage alone, zero actions, {}x{}, cameras agentview+wrist, images every "
          "step, {} x {:.0f} s per side and point (medians), {} cores".format(
              a.size, a.size, a.repeats, a.duration, os.cpu_count()))
    print("tasks: " + a.tasks)
    print("workers  envs  backend  readback   C++ frames/s  Python frames/s  Python/C++")
    for w, n, backend, readback, c, y, cs, ys in rows:
        print("{:7d}  {:4d}  {:<7s}  {:<9s}  {:12.0f}  {:15.0f}  {:10.2f}".format(
            w, n, backend, readback, c, y, y / c))
    for w, n, backend, readback, c, y, cs, ys in rows:
        print("runs at {} workers: C++ {}  Python {}".format(
            w, [round(x) for x in cs], [round(x) for x in ys]))


if __name__ == "__main__":
    main()

"""Writes the seed corpus of demo_file_fuzz (tests/fuzz/corpus/demo_file):
a small LIBERO-layout file (2 demos of 3 and 2 steps, two 4x6 cameras,
LIBERO's proprio, 7-D actions) and the hostile shapes of issue 60 made from
it: attribute arrays, 10^9 declared steps in the actions or a camera, a
100,000-pixel-wide camera, demos of no steps.

    /usr/bin/python3 tests/fuzz/make_demo_corpus.py tests/fuzz/corpus/demo_file
"""
import os
import shutil
import sys

import h5py
import numpy as np


def write_good(path):
    with h5py.File(path, "w") as f:
        d = f.create_group("data")
        d.attrs["env_name"] = "rl-vla3/lift"
        d.attrs["total"] = 5
        for i, t in enumerate([3, 2]):
            e = d.create_group("demo_%d" % i)
            e.attrs["num_samples"] = t
            e.attrs["task"] = "lift_the_red_cube"
            e.attrs["instruction"] = "lift the red cube"
            e.attrs["init_id"] = i
            for cam in ["agentview_rgb", "eye_in_hand_rgb"]:
                e.create_dataset("obs/" + cam, data=np.full((t, 4, 6, 3), 7, np.uint8))
            e.create_dataset("obs/ee_pos", data=np.zeros((t, 3)))
            e.create_dataset("obs/ee_ori", data=np.zeros((t, 3)))
            e.create_dataset("obs/gripper_states", data=np.zeros((t, 2)))
            e.create_dataset("actions", data=np.linspace(-1, 1, t * 7).reshape(t, 7))
            e.create_dataset("rewards", data=np.eye(1, t, t - 1).reshape(t))
            e.create_dataset("dones", data=np.eye(1, t, t - 1).reshape(t).astype(np.uint8))


def main(out):
    os.makedirs(out, exist_ok=True)
    good = os.path.join(out, "good.hdf5")
    write_good(good)

    def make(name, change):
        path = os.path.join(out, name)
        shutil.copy(good, path)
        with h5py.File(path, "r+") as f:
            change(f["data/demo_0"], f)

    def attrs(e, f):
        del e.attrs["num_samples"]
        e.attrs["num_samples"] = np.arange(4096, dtype=np.int64)

    def task(e, f):
        del e.attrs["task"]
        e.attrs["task"] = ["x" * 8] * 1024

    def steps(e, f):
        del e["actions"]
        e.create_dataset("actions", shape=(10**9, 7), dtype="f8", chunks=(1024, 7))

    def camera(e, f):
        del e["obs/agentview_rgb"]
        e.create_dataset("obs/agentview_rgb", shape=(10**9, 4, 6, 3), dtype="u1",
                         chunks=(1, 4, 6, 3))

    def wide(e, f):
        del e["obs/agentview_rgb"]
        e.create_dataset("obs/agentview_rgb", shape=(3, 100000, 6, 3), dtype="u1",
                         chunks=(1, 16, 6, 3))

    def empty(e, f):
        for g in (f["data/demo_0"], f["data/demo_1"]):
            for k in ["actions", "rewards", "dones", "obs/agentview_rgb",
                      "obs/eye_in_hand_rgb", "obs/ee_pos", "obs/ee_ori",
                      "obs/gripper_states"]:
                shape, dtype = (0,) + g[k].shape[1:], g[k].dtype
                del g[k]
                g.create_dataset(k, shape=shape, dtype=dtype)
            g.attrs["num_samples"] = 0

    def nan(e, f):
        e["actions"][1, 3] = np.nan

    for name, change in [("attr_array.hdf5", attrs), ("task_array.hdf5", task),
                         ("huge_actions.hdf5", steps), ("huge_camera.hdf5", camera),
                         ("wide_camera.hdf5", wide), ("no_steps.hdf5", empty),
                         ("nan_action.hdf5", nan)]:
        make(name, change)
    print("wrote", sorted(os.listdir(out)))


if __name__ == "__main__":
    main(sys.argv[1])

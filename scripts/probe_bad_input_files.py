"""Issue 60's probe files at the run's shape (64x64, 2 cameras, 2 demos of 50 steps).

A good LIBERO-layout file and the hostile variants of issue 60's table, written
into the folder given: scripts/probe_bad_inputs.sh runs rl-vla3 on each.
"""
import shutil, sys, h5py, numpy as np
out = sys.argv[1]
def good(path, t=50):
    with h5py.File(path, "w") as f:
        d = f.create_group("data")
        for i in range(2):
            e = d.create_group("demo_%d" % i)
            e.attrs["num_samples"] = t; e.attrs["task"] = "lift_the_red_cube"
            e.attrs["instruction"] = "lift the red cube"; e.attrs["init_id"] = i
            for cam in ["agentview_rgb", "eye_in_hand_rgb"]:
                e.create_dataset("obs/" + cam, data=np.full((t, 64, 64, 3), 7, np.uint8))
            e.create_dataset("obs/ee_pos", data=np.zeros((t, 3)))
            e.create_dataset("obs/ee_ori", data=np.zeros((t, 3)))
            e.create_dataset("obs/gripper_states", data=np.zeros((t, 2)))
            e.create_dataset("actions", data=np.zeros((t, 7)))
            e.create_dataset("rewards", data=np.zeros(t)); e.create_dataset("dones", data=np.zeros(t, np.uint8))
good(out + "/good.hdf5")
def make(name, change):
    shutil.copy(out + "/good.hdf5", out + "/" + name)
    with h5py.File(out + "/" + name, "r+") as f:
        change(f)
def attr(f):
    e = f["data/demo_0"]; del e.attrs["num_samples"]; e.attrs["num_samples"] = np.arange(4096, dtype=np.int64)
def task(f):
    e = f["data/demo_0"]; del e.attrs["task"]; e.attrs["task"] = ["x" * 8] * 1024
def cam(T):
    def c(f):
        e = f["data/demo_0"]; del e["obs/agentview_rgb"]
        e.create_dataset("obs/agentview_rgb", shape=(T, 64, 64, 3), dtype="u1", chunks=(1, 64, 64, 3))
    return c
def zero(f):
    for g in (f["data/demo_0"], f["data/demo_1"]):
        for k in ["actions", "rewards", "dones", "obs/agentview_rgb", "obs/eye_in_hand_rgb",
                  "obs/ee_pos", "obs/ee_ori", "obs/gripper_states"]:
            shape, dt = (0,) + g[k].shape[1:], g[k].dtype; del g[k]; g.create_dataset(k, shape=shape, dtype=dt)
        g.attrs["num_samples"] = 0
def act(v):
    def a(f):
        f["data/demo_0/actions"][3, 2] = v
    return a
for n, c in [("attr.hdf5", attr), ("task.hdf5", task), ("t1e9.hdf5", cam(10**9)), ("t1e5.hdf5", cam(10**5)),
             ("t0.hdf5", zero), ("nan.hdf5", act(np.nan)), ("big.hdf5", act(1e30))]:
    make(n, c)
import os; os.makedirs(out + "/loop", exist_ok=True); shutil.copy(out + "/good.hdf5", out + "/loop/a.hdf5")
if not os.path.lexists(out + "/loop/self.hdf5"): os.symlink("self.hdf5", out + "/loop/self.hdf5")
print("made")

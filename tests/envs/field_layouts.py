"""Demo files as the field's own tools write them, made from an rl-vla3 file.

An independent writer (h5py and numpy only, nothing of rl-vla3) following the
published layouts:

  libero SRC DST     LIBERO's scripts/create_dataset.py: /data attrs
                     problem_info (JSON, language_instruction), env_args,
                     bddl_file_name, macros_image_convention "opengl" (frames
                     bottom row first), num_demos, total; per demo
                     num_samples, model_file, init_state; obs agentview_rgb,
                     eye_in_hand_rgb (at twice the source's size), ee_pos,
                     ee_ori (axis-angle), ee_states, gripper_states,
                     joint_states; actions, states, robot_states, rewards and
                     dones (uint8). No per-demo task or instruction.
  robomimic SRC DST  robomimic's dataset layout: /data attrs env_args (JSON:
                     env_name, type, env_kwargs), total; per demo
                     num_samples; obs and next_obs agentview_image,
                     robot0_eye_in_hand_image, robot0_eef_pos, robot0_eef_quat
                     (x, y, z, w), robot0_gripper_qpos; actions, states,
                     rewards, dones; mask/train and mask/valid (every 5th
                     demo valid) as byte strings. No instruction at all.
  check SRC          the lookups LIBERO's and robomimic's loaders make, on a
                     file rl-vla3 wrote (prints "loaders ok").

Run with Debian's interpreter: /usr/bin/python3 field_layouts.py ...
"""
import json
import sys

import h5py
import numpy as np


def demos(f):
    return sorted(f["data"].keys(), key=lambda k: int(k[5:]))


def rotvec_to_quat_xyzw(r):
    angle = np.linalg.norm(r, axis=1, keepdims=True)
    axis = np.where(angle > 1e-12, r / np.maximum(angle, 1e-12), 0.0)
    return np.concatenate([axis * np.sin(angle / 2), np.cos(angle / 2)], 1)


def libero(src, dst):
    with h5py.File(src, "r") as s, h5py.File(dst, "w") as d:
        first = s["data"][demos(s)[0]]
        grp = d.create_group("data")
        grp.attrs["problem_info"] = json.dumps({
            "problem_name": "libero_tabletop_manipulation",
            "domain_name": "kitchen",
            "language_instruction": first.attrs["instruction"].upper() + ".",
        })
        grp.attrs["env_args"] = json.dumps({
            "type": 1, "env_name": "Libero_Tabletop_Manipulation",
            "problem_name": "libero_tabletop_manipulation",
            "bddl_file": "task.bddl", "env_kwargs": {}})
        grp.attrs["bddl_file_name"] = "task.bddl"
        grp.attrs["bddl_file_content"] = "(define (problem task))"
        grp.attrs["macros_image_convention"] = "opengl"
        total = 0
        for i, name in enumerate(demos(s)):
            e = s["data"][name]
            t = e["actions"].shape[0]
            g = grp.create_group(f"demo_{i}")
            obs = g.create_group("obs")
            for cam in ("agentview", "eye_in_hand"):
                img = e["obs"][cam + "_rgb"][:]
                big = img.repeat(2, axis=1).repeat(2, axis=2)
                obs.create_dataset(cam + "_rgb", data=big[:, ::-1])
            pos, ori = e["obs"]["ee_pos"][:], e["obs"]["ee_ori"][:]
            obs.create_dataset("ee_pos", data=pos)
            obs.create_dataset("ee_ori", data=ori)
            obs.create_dataset("ee_states", data=np.hstack([pos, ori]))
            obs.create_dataset("gripper_states",
                               data=e["obs"]["gripper_states"][:])
            obs.create_dataset("joint_states", data=np.zeros((t, 7)))
            g.create_dataset("actions", data=e["actions"][:])
            g.create_dataset("states", data=np.zeros((t, 45)))
            g.create_dataset("robot_states", data=np.zeros((t, 9)))
            g.create_dataset("rewards", data=np.eye(1, t, t - 1, np.uint8)[0])
            g.create_dataset("dones", data=np.eye(1, t, t - 1, np.uint8)[0])
            g.attrs["num_samples"] = t
            g.attrs["model_file"] = "<mujoco/>"
            g.attrs["init_state"] = np.zeros(45)
            total += t
        grp.attrs["num_demos"] = len(demos(s))
        grp.attrs["total"] = total


def robomimic(src, dst):
    with h5py.File(src, "r") as s, h5py.File(dst, "w") as d:
        grp = d.create_group("data")
        grp.attrs["env_args"] = json.dumps({
            "env_name": "Lift", "type": 1,
            "env_kwargs": {"camera_heights": 84, "camera_widths": 84}})
        names, total = [], 0
        for i, name in enumerate(demos(s)):
            e = s["data"][name]
            t = e["actions"].shape[0]
            g = grp.create_group(f"demo_{i}")
            obs = {
                "agentview_image": e["obs"]["agentview_rgb"][:],
                "robot0_eye_in_hand_image": e["obs"]["eye_in_hand_rgb"][:],
                "robot0_eef_pos": e["obs"]["ee_pos"][:],
                "robot0_eef_quat": rotvec_to_quat_xyzw(e["obs"]["ee_ori"][:]),
                "robot0_gripper_qpos": e["obs"]["gripper_states"][:],
            }
            for key, v in obs.items():
                g.create_dataset(f"obs/{key}", data=v)
                g.create_dataset(f"next_obs/{key}",
                                 data=np.concatenate([v[1:], v[-1:]]))
            g.create_dataset("actions", data=e["actions"][:])
            g.create_dataset("states", data=np.zeros((t, 32)))
            g.create_dataset("rewards", data=np.eye(1, t, t - 1)[0])
            g.create_dataset("dones", data=np.eye(1, t, t - 1)[0])
            g.attrs["num_samples"] = t
            names.append(f"demo_{i}")
            total += t
        grp.attrs["total"] = total
        valid = [n for i, n in enumerate(names) if i % 5 == 4]
        train = [n for n in names if n not in valid]
        d.create_dataset("mask/train", data=np.array(train, dtype="S"))
        d.create_dataset("mask/valid", data=np.array(valid, dtype="S"))


def check(src):
    with h5py.File(src, "r") as f:
        # robomimic: FileUtils.get_env_metadata_from_dataset
        env_meta = json.loads(f["data"].attrs["env_args"])
        assert {"env_name", "type", "env_kwargs"} <= env_meta.keys(), env_meta
        assert f["data"].attrs["total"] == sum(
            f["data"][n].attrs["num_samples"] for n in demos(f))
        # robomimic's SequenceDataset: demos by number, num_samples, masks
        for n in demos(f):
            g = f["data"][n]
            assert g.attrs["num_samples"] == g["actions"].shape[0], n
            # LIBERO's loader: its obs keys
            for key in ("agentview_rgb", "eye_in_hand_rgb", "gripper_states"):
                assert g["obs"][key].shape[0] == g.attrs["num_samples"], key
        train = [x.decode("utf-8") for x in f["mask/train"][:]]
        assert sorted(train) == sorted(demos(f)), train
        # LIBERO: the instruction in problem_info
        info = json.loads(f["data"].attrs["problem_info"])
        assert info["language_instruction"], info
        assert f["data"].attrs["macros_image_convention"] == "opencv"
        assert f["data"].attrs["num_demos"] == len(demos(f))
    print("loaders ok")


if __name__ == "__main__":
    {"libero": libero, "robomimic": robomimic, "check": check}[sys.argv[1]](
        *sys.argv[2:])

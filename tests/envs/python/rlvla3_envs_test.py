"""rlvla3_envs (envs/python) from Python, against the real C++ env pool:
shapes and spaces, fixed initial states, next-step auto-reset, truncation,
EnvPool-style send/recv, the scripted experts, and clear errors.

    PYTHONPATH=build/envs/python /usr/bin/python3 -m unittest \
        tests/envs/python/rlvla3_envs_test.py
"""

import threading
import time
import unittest

import numpy as np

import rlvla3_envs

TASK = "put_red_cube_in_basket"


def make(**kw):
    args = dict(num_envs=4, num_threads=2, seed=3, image_size=(32, 32))
    args.update(kw)
    return rlvla3_envs.make(TASK, **args)


class Spaces(unittest.TestCase):
    def test_observations_fit_the_declared_spaces(self):
        with make(cameras=("agentview", "wrist", "sideview")) as envs:
            obs, info = envs.reset(seed=0)
            self.assertEqual(set(obs), {"agentview", "wrist", "sideview", "proprio"})
            self.assertTrue(envs.observation_space.contains(obs))
            self.assertEqual(obs["sideview"].shape, (4, 32, 32, 3))
            self.assertEqual(info["images"].shape, (4, 3, 32, 32, 3))
            # The cameras are views of one block: no copy per camera.
            self.assertTrue(np.shares_memory(obs["wrist"], info["images"]))
            self.assertTrue(envs.single_action_space.contains(
                np.zeros(7, np.float32)))
            self.assertGreater(obs["agentview"].std(), 0)  # rendered
            self.assertEqual(envs.instructions[0], "put the red cube in the basket")


class Episodes(unittest.TestCase):
    def test_fixed_initial_states_give_the_same_first_observation(self):
        with make() as a, make(seed=99) as b:
            oa, ia = a.reset(options={"init_ids": [7, 7, 8, 9]})
            ob, ib = b.reset(options={"init_ids": [7, 7, 8, 9]})
            np.testing.assert_array_equal(ia["init_id"], [7, 7, 8, 9])
            np.testing.assert_array_equal(oa["agentview"], ob["agentview"])
            np.testing.assert_array_equal(oa["agentview"][0], oa["agentview"][1])
            self.assertFalse(np.array_equal(oa["agentview"][1], oa["agentview"][2]))

    def test_an_episode_ends_and_the_next_step_starts_another(self):
        with make(max_episode_steps=5) as envs:
            envs.reset(seed=1)
            zeros = np.zeros((4, 7), np.float32)
            first, *_ = envs.step(zeros)
            kept = first["agentview"].copy()
            for t in range(2, 6):
                obs, reward, terminated, truncated, info = envs.step(zeros)
                self.assertEqual(truncated.all(), t == 5)
            np.testing.assert_array_equal(info["elapsed_step"], [5] * 4)
            # The returned arrays are the caller's: later steps leave them be.
            np.testing.assert_array_equal(first["agentview"], kept)
            obs, reward, terminated, truncated, info = envs.step(zeros)
            np.testing.assert_array_equal(info["elapsed_step"], [0] * 4)
            np.testing.assert_array_equal(reward, [0] * 4)
            self.assertFalse(truncated.any() or terminated.any())

    def test_the_experts_solve_episodes_and_terminate_them(self):
        with make(num_envs=2, num_threads=1) as envs:
            envs.reset(seed=0)
            successes = 0
            for _ in range(150):
                obs, reward, terminated, truncated, info = envs.step(
                    envs.expert_actions())
                successes += int(terminated.sum())
                np.testing.assert_array_equal(info["success"], terminated)
                self.assertTrue((reward[terminated] > 0).all())
            self.assertGreaterEqual(successes, 2)


class Async(unittest.TestCase):
    def test_every_sent_env_comes_back_once(self):
        with make(num_envs=6, num_threads=2) as envs:
            envs.async_reset()
            counts = np.zeros(6, int)
            for _ in range(30):
                obs, reward, terminated, truncated, info = envs.recv(min_envs=2)
                ids = info["env_id"]
                self.assertGreaterEqual(len(ids), 2)
                self.assertEqual(obs["agentview"].shape[0], len(ids))
                self.assertEqual(len(set(ids.tolist())), len(ids))
                counts[ids] += 1
                envs.send(np.zeros((len(ids), 7), np.float32), ids)
            self.assertTrue((counts > 0).all())
            with self.assertRaises(RuntimeError):  # in flight: no state yet
                envs.send(np.zeros((6, 7), np.float32))

    def test_bad_actions_are_refused_before_anything_is_sent(self):
        with make() as envs:
            envs.reset(seed=0)
            with self.assertRaises(ValueError):
                envs.step(np.zeros((4, 6), np.float32))
            bad = np.zeros((4, 7), np.float32)
            bad[2, 3] = np.nan
            with self.assertRaisesRegex(ValueError, "env 2 is not finite"):
                envs.step(bad)
            obs, reward, terminated, truncated, info = envs.step(
                np.zeros((4, 7), np.float32))  # the envs go on
            np.testing.assert_array_equal(info["elapsed_step"], [1] * 4)
            self.assertFalse(info["invalid_action"].any())


class Misuse(unittest.TestCase):
    """Issue 60: misuse is an exception, never a hang, a crash or an exit."""

    def test_an_env_listed_twice_is_refused_and_the_envs_go_on(self):
        with make() as envs:
            envs.reset(seed=0)
            # The old module hung here holding the GIL (20 actions for env 0).
            with self.assertRaisesRegex(ValueError, "env id 0 is listed twice"):
                envs.send(np.zeros((20, 7), np.float32), np.zeros(20, np.int32))
            with self.assertRaisesRegex(ValueError, "env id 1 is listed twice"):
                envs.send(np.zeros((2, 7), np.float32), np.array([1, 1], np.int32))
            obs, reward, terminated, truncated, info = envs.step(
                np.zeros((4, 7), np.float32))
            np.testing.assert_array_equal(info["elapsed_step"], [1] * 4)

    def test_numbers_out_of_range_are_value_errors(self):
        for kw, name in [(dict(num_envs=10**6), "num_envs"),
                         (dict(max_episode_steps=-5), "max_episode_steps"),
                         (dict(seed=-1), "seed"),
                         (dict(image_size=(8, 8)), "height")]:
            with self.assertRaisesRegex(ValueError, name):
                make(**kw)

    def test_a_call_while_another_thread_is_inside_is_refused(self):
        with make(num_envs=2) as envs:
            envs.reset(seed=0)  # both envs ready, none in flight
            got = []

            def wait():  # nothing in flight: waits out its 2 s
                try:
                    envs._core.recv(1, 2.0)
                except Exception as e:  # noqa: BLE001 - recorded, checked below
                    got.append(type(e))

            t = threading.Thread(target=wait)
            t.start()
            time.sleep(0.5)
            with self.assertRaisesRegex(RuntimeError, "another thread"):
                envs.stats()
            t.join()
            self.assertEqual(got, [TimeoutError])
            self.assertIn("steps", envs.stats())  # free again

    def test_a_mujoco_error_is_a_python_exception(self):
        # Without the module's handler MuJoCo printed "Press Enter to exit"
        # and exited the interpreter.
        with self.assertRaisesRegex(RuntimeError, "MuJoCo: boom"):
            rlvla3_envs._core._raise_mujoco_error("boom")
        with make(num_envs=1, num_threads=1) as envs:  # the module goes on
            obs, _ = envs.reset(seed=0)
            self.assertEqual(obs["proprio"].shape[0], 1)


class Errors(unittest.TestCase):
    def test_an_unknown_task_or_camera_names_it(self):
        with self.assertRaisesRegex(ValueError, "no_such_task"):
            rlvla3_envs.make("no_such_task", num_envs=1)
        with self.assertRaisesRegex(ValueError, "ceiling"):
            make(num_envs=1, cameras=("ceiling",))


if __name__ == "__main__":
    unittest.main()

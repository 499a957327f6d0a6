"""rlvla3_envs (envs/python) from Python, against the real C++ env pool:
shapes and spaces, fixed initial states, next-step auto-reset, truncation,
EnvPool-style send/recv and partial calls, seeding, the scripted experts,
Gymnasium's conventions, and clear errors.

    PYTHONPATH=build/envs/python /usr/bin/python3 -m unittest \
        tests/envs/python/rlvla3_envs_test.py
"""

import enum
import inspect
import os
import sys
import threading
import time
import types
import unittest
from unittest import mock

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


ZEROS4 = np.zeros((4, 7), np.float32)


def _have_gymnasium_vector():
    try:
        import gymnasium.wrappers.vector  # noqa: F401
        from gymnasium.vector import AutoresetMode  # noqa: F401
    except ImportError:
        return False
    return True


def later_init_ids(envs, seed, steps=9):
    """reset(seed), then zero actions (max_episode_steps=2): the initial
    states of the episodes the auto-resets start, env by env."""
    envs.reset(seed=seed)
    got = {i: [] for i in range(envs.num_envs)}
    for _ in range(steps):
        obs, reward, terminated, truncated, info = envs.step(
            np.zeros((envs.num_envs, 7), np.float32))
        for i in np.flatnonzero(info["elapsed_step"] == 0):
            assert reward[i] == 0 and not terminated[i] and not truncated[i]
            got[int(info["env_id"][i])].append(int(info["init_id"][i]))
    return got


class Seeding(unittest.TestCase):
    """Issue 61 (2.1): reset(seed) governs every later episode too."""

    def test_reset_seed_governs_the_episodes_after_auto_resets(self):
        with make(seed=0, render=False, max_episode_steps=2) as envs:
            a = later_init_ids(envs, seed=1)
            b = later_init_ids(envs, seed=2)
            again = later_init_ids(envs, seed=1)
        self.assertEqual([len(v) for v in a.values()], [3] * 4)
        self.assertEqual(a, again)  # the old module: the pool's draws went on
        self.assertNotEqual(a, b)   # the old module: both from make's seed
        with make(seed=5, render=False, max_episode_steps=2) as other:
            self.assertEqual(later_init_ids(other, seed=1), a)

    def test_async_stepping_draws_the_same_episodes_as_sync(self):
        with make(seed=0, render=False, max_episode_steps=2) as envs:
            sync = later_init_ids(envs, seed=4)
            envs.reset(seed=4)
            got = {i: [] for i in range(4)}
            envs.send(ZEROS4)
            while min(len(v) for v in got.values()) < 3:
                obs, reward, terminated, truncated, info = envs.recv(min_envs=1)
                for i, e, k in zip(info["env_id"], info["elapsed_step"],
                                   info["init_id"]):
                    if e == 0:
                        got[int(i)].append(int(k))
                envs.send(np.zeros((len(info["env_id"]), 7), np.float32),
                          info["env_id"])
        self.assertEqual({i: v[:3] for i, v in got.items()}, sync)

    def test_an_ended_env_among_stepped_ones_starts_its_next_episode(self):
        with make(render=False, max_episode_steps=2) as envs:
            envs.reset(seed=0)
            for _ in range(2):
                *_, truncated, info = envs.step(np.zeros((1, 7), np.float32),
                                                env_id=[0])
            self.assertTrue(truncated[0])
            obs, reward, terminated, truncated, info = envs.step(ZEROS4)
            np.testing.assert_array_equal(info["elapsed_step"], [0, 1, 1, 1])
            self.assertEqual(reward[0], 0)
            self.assertFalse(terminated.any() or truncated.any())


class Issue61(unittest.TestCase):
    """Issue 61, section 2: Gymnasium's and EnvPool's conventions."""

    def test_autoreset_mode_is_gymnasiums_enum_where_it_has_one(self):
        class AutoresetMode(enum.Enum):
            NEXT_STEP = "NextStep"

        vector = types.ModuleType("gymnasium.vector")
        vector.AutoresetMode = AutoresetMode
        gym = types.ModuleType("gymnasium")
        gym.vector = vector
        with mock.patch.dict(sys.modules, {"gymnasium": gym,
                                           "gymnasium.vector": vector}):
            with make(num_envs=1, render=False) as envs:
                mode = envs.metadata["autoreset_mode"]
        self.assertIs(mode, AutoresetMode.NEXT_STEP)
        if not _have_gymnasium_vector():
            with make(num_envs=1, render=False) as envs:
                self.assertEqual(envs.metadata["autoreset_mode"], "next_step")

    def test_unbounded_boxes_sample_and_spaces_seed(self):
        Box = rlvla3_envs.Box
        free = Box(-np.inf, np.inf, (1000,), np.float32)
        x = free.sample()  # the old Box: OverflowError
        self.assertTrue(free.contains(x) and np.isfinite(x).all())
        self.assertTrue((Box(2.0, np.inf, (100,), np.float32).sample() >= 2).all())
        self.assertTrue((Box(-np.inf, -1.0, (100,), np.float32).sample() <= -1).all())
        free.seed(7)
        first = free.sample()
        free.seed(7)
        np.testing.assert_array_equal(free.sample(), first)
        with make(num_envs=1, image_size=(16, 16)) as envs:
            space = envs.single_observation_space
        seeds = space.seed(3)
        self.assertEqual(set(seeds), {"agentview", "wrist", "proprio"})
        a, b = space.sample(), (space.seed(3), space.sample())[1]
        self.assertTrue(space.contains(a))
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])

    def test_recv_with_too_few_envs_in_flight_is_refused_at_once(self):
        with make(render=False, timeout_s=5.0) as envs:
            self.assertEqual(envs.timeout_s, 5.0)
            envs.reset(seed=0)
            t0 = time.monotonic()
            with self.assertRaisesRegex(RuntimeError, r"0 env\(s\) in flight"):
                envs.recv()  # the old module: a 60 s wait, then TimeoutError
            envs.send(np.zeros((2, 7), np.float32), [0, 1])
            with self.assertRaisesRegex(RuntimeError, r"min_envs = 3 but 2 env"):
                envs.recv(min_envs=3)
            self.assertLess(time.monotonic() - t0, 2.0)
            *_, info = envs.recv(min_envs=2, timeout=5.0)
            self.assertEqual(sorted(info["env_id"].tolist()), [0, 1])
        with self.assertRaisesRegex(ValueError, "timeout_s"):
            make(timeout_s=0)

    def test_every_call_after_close_is_refused(self):
        envs = make(render=False)
        envs.reset(seed=0)
        envs.close()
        calls = {"reset": envs.reset, "step": lambda: envs.step(ZEROS4),
                 "send": lambda: envs.send(ZEROS4), "recv": envs.recv,
                 "async_reset": envs.async_reset, "stats": envs.stats,
                 "expert_actions": envs.expert_actions,
                 "instructions": lambda: envs.instructions}
        for name, call in calls.items():
            with self.subTest(call=name):
                with self.assertRaisesRegex(RuntimeError, name + ": this VecEnv is closed"):
                    call()
        envs.close()  # again: nothing to do

    def test_render_false_declares_and_returns_proprio_only(self):
        with make(render=False) as envs:
            self.assertEqual(set(envs.observation_space.keys()), {"proprio"})
            self.assertEqual(set(envs.single_observation_space.keys()), {"proprio"})
            obs, info = envs.reset(seed=0)
            self.assertEqual(set(obs), {"proprio"})
            self.assertNotIn("images", info)
            obs, *_, info = envs.step(ZEROS4)
            self.assertTrue(envs.observation_space.contains(obs))
            self.assertNotIn("images", info)

    def test_unknown_reset_options_are_refused(self):
        with make(render=False) as envs:
            with self.assertRaisesRegex(ValueError, r"'init_id'.*'init_ids'"):
                envs.reset(options={"init_id": [1, 2, 3, 4]})
            obs, info = envs.reset(options={"init_ids": [1, 2, 3, 4]})
            np.testing.assert_array_equal(info["init_id"], [1, 2, 3, 4])

    def test_make_documents_every_argument_and_its_default(self):
        doc = rlvla3_envs.make.__doc__
        docs = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "..", "..", "..", "docs", "python.md")
        with open(docs) as f:
            page = f.read()
        for name in inspect.signature(rlvla3_envs.make).parameters:
            with self.subTest(argument=name):
                self.assertRegex(doc, r"\n    (\w+, )*{}\b".format(name))
                self.assertTrue("`{}`".format(name) in page,
                                "docs/python.md names no `{}`".format(name))
        self.assertIn("default\n        (64, 64)", doc)

    def test_partial_reset_and_step_answer_for_their_envs_in_order(self):
        with make(render=False) as envs:
            self.assertEqual(len(envs), 4)
            envs.reset(seed=0)
            obs, info = envs.reset(env_id=[2, 0], options={"init_ids": [5, 6]})
            np.testing.assert_array_equal(info["env_id"], [2, 0])
            np.testing.assert_array_equal(info["init_id"], [5, 6])
            self.assertEqual(obs["proprio"].shape, (2, 8))
            obs, reward, terminated, truncated, info = envs.step(
                np.zeros((2, 7), np.float32), env_id=[3, 1])
            np.testing.assert_array_equal(info["env_id"], [3, 1])
            np.testing.assert_array_equal(info["elapsed_step"], [1, 1])
            *_, info = envs.step(ZEROS4)
            np.testing.assert_array_equal(info["elapsed_step"], [1, 2, 1, 2])
            envs.send(np.zeros((1, 7), np.float32), [0])
            with self.assertRaisesRegex(RuntimeError, r"env\(s\) \[0\] are in flight"):
                envs.step(np.zeros((1, 7), np.float32), env_id=[1])
            envs.recv(min_envs=1)

    @unittest.skipUnless(_have_gymnasium_vector(), "Gymnasium 1.1+ is not installed")
    def test_gymnasiums_record_episode_statistics_wraps_the_envs(self):
        from gymnasium.wrappers.vector import RecordEpisodeStatistics
        raw = make(num_envs=2, render=False, max_episode_steps=3)
        envs = RecordEpisodeStatistics(rlvla3_envs.gymnasium_vector_env(raw))
        obs, info = envs.reset(seed=0)
        self.assertTrue(envs.observation_space.contains(obs))
        zeros = np.zeros((2, 7), np.float32)
        for _ in range(3):
            obs, reward, terminated, truncated, info = envs.step(zeros)
        np.testing.assert_array_equal(info["_episode"], [True, True])
        np.testing.assert_array_equal(info["episode"]["l"], [3, 3])
        *_, info = envs.step(zeros)  # the auto-reset step: no episode
        self.assertNotIn("episode", info)
        envs.close()
        with self.assertRaisesRegex(RuntimeError, "closed"):
            raw.stats()


if __name__ == "__main__":
    unittest.main()

"""The Python rollout client (services/python) against the C++ services: a
learner and an inference server as real `rl-vla3 serve` processes; the toy
simulator acts as a rollout worker, the learner trains on its segments, health
checks answer SERVING, a malformed observation is refused naming the field,
images travel in the run's camera order (RunSettings.cameras) and other
cameras are refused naming the run's;
over mutual TLS the toy worker trains the learner and a client without the
certificate is refused; the token never goes out in plaintext off loopback."""

import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

sys.path.insert(0, os.path.join(os.environ["RLVLA3_SOURCE_DIR"],
                                "services", "python", "examples"))

from rlvla3_client import (Reply, RolloutClient, SegmentBuilder, Tls, WireShape,  # noqa: E402
                           check_health)
import toy_env_worker  # noqa: E402

BINARY = os.environ["RLVLA3_BINARY"]
CONFIG = [
    "--config", os.path.join(os.environ["RLVLA3_SOURCE_DIR"],
                             "configs/bench_cpu.yaml"),
    "--set", "env.num_envs=2", "--set", "rl.rollouts_per_step=1",
]
TOKEN = "python-client-token"


def start(role, extra, log_dir):
    env = dict(os.environ, RLVLA3_TOKEN=TOKEN)
    out = open(os.path.join(log_dir, role + ".out"), "w+")
    err = open(os.path.join(log_dir, role + ".err"), "w")
    p = subprocess.Popen([BINARY, "serve", role, "--listen", "127.0.0.1:0"]
                         + extra + CONFIG, stdout=out, stderr=err, env=env)
    deadline = time.time() + 120
    while time.time() < deadline:
        out.seek(0)
        m = re.search(r"serving on (\S+)", out.read())
        if m:
            return p, m.group(1)
        if p.poll() is not None:
            raise RuntimeError("%s exited: %s" % (role, open(err.name).read()))
        time.sleep(0.1)
    raise RuntimeError("%s not ready" % role)


class PythonClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        # The learner's run folder (its checkpoints) is the test's own.
        cls.learner, cls.learner_addr = start(
            "learner", ["--set", "run.out_dir=" + cls.dir], cls.dir)
        cls.inference, cls.inference_addr = start(
            "inference", ["--learner", cls.learner_addr], cls.dir)

    @classmethod
    def tearDownClass(cls):
        for p in (cls.inference, cls.learner):
            p.terminate()
            p.wait(timeout=30)

    def test_health_checks_answer_serving(self):
        self.assertEqual(check_health(self.learner_addr), "SERVING")
        self.assertEqual(check_health(self.inference_addr), "SERVING")

    def test_toy_simulator_drives_training(self):
        os.environ["RLVLA3_TOKEN"] = TOKEN  # read by the example, as a user would set it
        rc = toy_env_worker.main(["--inference", self.inference_addr,
                                  "--learner", self.learner_addr,
                                  "--env-ids", "0,1", "--segments", "4"])
        self.assertEqual(rc, 0)
        client = RolloutClient(self.inference_addr, self.learner_addr, [0],
                               token=TOKEN)
        deadline = time.time() + 60
        while time.time() < deadline:
            st = client.learner_status()
            if st.optimizer_steps >= 2:
                break
            time.sleep(0.2)
        self.assertGreaterEqual(st.optimizer_steps, 2)
        self.assertEqual(st.invalid_requests, 0)
        client.close()

    def test_settings_describe_the_run(self):
        client = RolloutClient(self.inference_addr, self.learner_addr, [0],
                               token=TOKEN)
        s = client.settings()
        self.assertEqual((s.image_height, s.image_width, s.proprio_dim,
                          s.chunk, s.action_dim), (64, 64, 8, 4, 7))
        self.assertEqual(list(s.cameras), ["agentview", "wrist"])
        self.assertEqual((s.num_envs, s.envs_per_worker, s.rollout_workers),
                         (2, 2, 1))
        self.assertEqual(len(s.instructions), 4)
        self.assertEqual(s.task_names[0], "put_red_cube_in_basket")
        self.assertEqual(s.max_segment_decisions, 16)
        self.assertEqual(s.execute_steps, 4)
        self.assertEqual((s.algorithm, s.mode), ("ppo", "async"))
        self.assertEqual(s.global_batch, 2 * 16)
        self.assertEqual(s.units_per_env_per_version, 16)
        client.close()

    def test_images_travel_in_the_runs_camera_order(self):
        """images= in RunSettings.cameras order (a list or a dict by name)
        is answered like the two keywords; cameras other than the run's are
        refused by the server naming the cameras it expects."""
        client = RolloutClient(self.inference_addr, self.learner_addr, [0],
                               token=TOKEN)
        client.shape = WireShape.from_settings(client.settings())
        self.assertEqual(client.shape.cameras, ("agentview", "wrist"))
        img = bytes(64 * 64 * 3)
        for images in ([img, img], {"wrist": img, "agentview": img}):
            reply = client.act(0, 0, images=images, proprio=[0.0] * 8)
            self.assertEqual(reply.env_id, 0)
            self.assertEqual(len(reply.actions), 4)
        with self.assertRaises(ValueError):  # one where the run has two
            client.act(0, 0, images=[img], proprio=[0.0] * 8)
        client.close()
        three = RolloutClient(self.inference_addr, self.learner_addr, [0],
                              token=TOKEN,
                              shape=WireShape(cameras=("agentview", "wrist",
                                                       "sideview")))
        with self.assertRaises(ValueError) as e:
            three.act(0, 0, images=[img] * 3, proprio=[0.0] * 8)
        self.assertIn('observation.images: expected cameras "agentview", '
                      '"wrist" in that order', str(e.exception))
        three.close()

    def test_malformed_observation_is_refused_naming_the_field(self):
        client = RolloutClient(self.inference_addr, self.learner_addr, [1],
                               token=TOKEN,
                               shape=WireShape(height=32, width=64))
        img = bytes(32 * 64 * 3)
        with self.assertRaises(ValueError) as e:
            client.act(1, 0, img, img, [0.0] * 8)
        self.assertIn("observation.images[0].rgb", str(e.exception))
        client.close()
        # Still serving.
        self.assertEqual(check_health(self.inference_addr), "SERVING")


class CameraOrderTest(unittest.TestCase):
    """A run's cameras (RunSettings.cameras) travel by name in its order,
    however many; a wrong count or name is refused before anything is sent."""

    def test_three_cameras_build_a_segment_in_the_runs_order(self):
        shape = WireShape(height=2, width=2, cameras=("agentview", "wrist", "sideview"))
        img = {c: bytes([i]) * 12 for i, c in enumerate(shape.cameras)}
        reply = Reply(env_id=0, actions=[[0.0] * 7] * 4, tokens=bytes(28),
                      log_probs=[0.0] * 4, value=0.0, version=0)
        seg = SegmentBuilder(env_id=0, task_id=0, shape=shape)
        seg.add(images=img, proprio=[0.0] * 8, reply=reply, reward=1.0,
                done=False, executed=4)
        m = seg.build(bootstrap=([img["agentview"], img["wrist"], img["sideview"]],
                                 [0.0] * 8))
        self.assertEqual([i.name for i in m.images], ["agentview", "wrist", "sideview"])
        self.assertEqual(list(m.images[2].rgb.shape), [2, 2, 2, 3])
        self.assertEqual(m.images[2].rgb.data, bytes([2]) * 24)
        with self.assertRaises(ValueError):  # two where the run has three
            seg.add(images=[img["agentview"], img["wrist"]], proprio=[0.0] * 8,
                    reply=reply)
        with self.assertRaises(ValueError):  # the two-camera keywords
            seg.add(img["agentview"], img["wrist"], [0.0] * 8, reply)
        with self.assertRaises(ValueError):  # a dict naming another camera
            seg.add(images={"agentview": b"", "wrist": b"", "overhead": b""},
                    proprio=[0.0] * 8, reply=reply)
        with self.assertRaises(ValueError):  # one buffer, not one per camera
            seg.add(images=bytes(36), proprio=[0.0] * 8, reply=reply)
        with self.assertRaises(ValueError):  # both forms at once
            seg.add(img["agentview"], img["wrist"], [0.0] * 8, reply,
                    images=list(img.values()))
        self.assertEqual(len(seg), 1)  # the refused decisions were not added

    def test_two_cameras_take_the_keywords_or_images(self):
        shape = WireShape(height=2, width=2)  # agentview, wrist
        a, w = bytes([1]) * 12, bytes([2]) * 12
        reply = Reply(env_id=0, actions=[[0.0] * 7] * 4, tokens=bytes(28),
                      log_probs=[0.0] * 4, value=0.0, version=0)
        by_keyword = SegmentBuilder(env_id=0, task_id=0, shape=shape)
        by_keyword.add(a, w, [0.0] * 8, reply, done=True)
        by_images = SegmentBuilder(env_id=0, task_id=0, shape=shape)
        by_images.add(images=[a, w], proprio=[0.0] * 8, reply=reply, done=True)
        self.assertEqual(by_keyword.build(bootstrap=(a, w, [0.0] * 8)),
                         by_images.build(bootstrap=([a, w], [0.0] * 8)))
        m = by_images.build()
        self.assertEqual([i.name for i in m.images], ["agentview", "wrist"])
        self.assertEqual(m.images[1].rgb.data, w)


class TlsClientTest(unittest.TestCase):
    """A learner and an inference server with cluster.tls_* set, the
    certificates made by scripts/make_cluster_tls.sh when the test starts."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        tls = os.path.join(cls.dir, "tls")
        subprocess.run(["bash", os.path.join(os.environ["RLVLA3_SOURCE_DIR"],
                                             "scripts/make_cluster_tls.sh"),
                        tls, "python-test", "1"], check=True,
                       stdout=subprocess.DEVNULL)
        cls.files = [os.path.join(tls, f)
                     for f in ("tls.crt", "tls.key", "ca.crt")]
        keys = []
        for key, path in zip(("cert", "key", "ca"), cls.files):
            keys += ["--set", "cluster.tls_%s=%s" % (key, path)]
        cls.learner, cls.learner_addr = start(
            "learner", keys + ["--set", "run.out_dir=" + cls.dir], cls.dir)
        cls.inference, cls.inference_addr = start(
            "inference", keys + ["--learner", cls.learner_addr], cls.dir)

    @classmethod
    def tearDownClass(cls):
        for p in (cls.inference, cls.learner):
            p.terminate()
            p.wait(timeout=30)

    def test_toy_worker_trains_the_learner_over_mutual_tls(self):
        os.environ["RLVLA3_TOKEN"] = TOKEN
        rc = toy_env_worker.main(["--inference", self.inference_addr,
                                  "--learner", self.learner_addr,
                                  "--env-ids", "0,1", "--segments", "4",
                                  "--tls"] + self.files)
        self.assertEqual(rc, 0)
        tls = Tls.from_files(*self.files)
        self.assertEqual(check_health(self.learner_addr, tls=tls), "SERVING")
        client = RolloutClient(self.inference_addr, self.learner_addr, [0],
                               token=TOKEN, tls=tls)
        deadline = time.time() + 60
        while client.learner_status().optimizer_steps < 2:
            self.assertLess(time.time(), deadline, "the learner never trained")
            time.sleep(0.2)
        client.close()

    def test_a_client_without_the_certificate_is_refused(self):
        with self.assertRaises(grpc.FutureTimeoutError):
            RolloutClient(self.inference_addr, self.learner_addr, [0],
                          token=TOKEN, timeout=3)
        with self.assertRaises(grpc.RpcError):
            check_health(self.learner_addr, timeout=3)


class PlaintextTokenTest(unittest.TestCase):
    def test_the_token_never_goes_out_in_plaintext_off_loopback(self):
        with self.assertRaises(ValueError) as e:
            RolloutClient("10.1.2.3:50052", "10.1.2.3:50051", [0], token="t")
        self.assertIn("plaintext", str(e.exception))

    def test_only_parsed_loopback_addresses_count_as_loopback(self):
        from rlvla3_client import _is_loopback
        for on in ("127.1.2.3:1", "dns:///localhost:1", "ipv4:127.0.0.1:1",
                   "ipv4:127.0.0.1:1,127.0.0.2:2", "ipv6:[::1]:1",
                   "[::ffff:127.0.0.1]:1", "unix:/tmp/s.sock", "LOCALHOST:1"):
            self.assertTrue(_is_loopback(on), on)
        for off in ("127.example.org:1", "dns:///127.example.org:1",
                    "ipv4:127.0.0.1:1,10.0.0.5:2", "127.0.0.1.nip.io:1",
                    "localhost.evil.com:1", "dns://8.8.8.8/evil.com:1",
                    "[::2]:1", "ipv6:[::1]:1,[2001:db8::1]:2", ""):
            self.assertFalse(_is_loopback(off), off)
        with self.assertRaises(ValueError):
            RolloutClient("127.example.org:50052", "127.0.0.1:50051", [0],
                          token="t")


if __name__ == "__main__":
    unittest.main()

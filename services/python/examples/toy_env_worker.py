#!/usr/bin/env python3
"""A toy simulator written in Python acting as an rl-vla3 rollout worker.

Each env shows a flat grey image whose brightness encodes a target; the reward
is 1 when the first action dimension has the target's sign. Decisions go to
the inference server, segments of `--rollout-len` decisions to the learner.

    pip install ./services/python      # the client and its stubs, once
    python3 services/python/examples/toy_env_worker.py \
        --inference 127.0.0.1:50052 --learner 127.0.0.1:50051 \
        --env-ids 0,1 --segments 8
"""

import argparse
import os
import random
import sys

from rlvla3_client import RolloutClient, SegmentBuilder, Tls, WireShape


class ToyEnv:
    def __init__(self, seed: int, shape: WireShape, episode_len: int = 8):
        self.rng = random.Random(seed)
        self.shape, self.episode_len = shape, episode_len
        self.reset()

    def reset(self):
        self.t = 0
        self.target = self.rng.choice((-1.0, 1.0))
        return self.observe()

    def observe(self):
        level = 64 if self.target < 0 else 192
        img = bytes([level]) * (self.shape.height * self.shape.width * 3)
        return img, img, [self.target] + [0.0] * (self.shape.proprio_dim - 1)

    def step(self, action):
        self.t += 1
        reward = 1.0 if action[0] * self.target > 0 else 0.0
        return reward, self.t >= self.episode_len


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inference", required=True)
    p.add_argument("--learner", required=True)
    p.add_argument("--env-ids", default="0")
    p.add_argument("--segments", type=int, default=8, help="per env")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tls", nargs=3, metavar=("CERT", "KEY", "CA"),
                   help="mutual TLS as the run's cluster.tls_* files")
    p.add_argument("--tls-server-name", default="")
    a = p.parse_args(argv)
    ids = [int(x) for x in a.env_ids.split(",")]
    tls = Tls.from_files(*a.tls, server_name=a.tls_server_name) if a.tls \
        else None
    client = RolloutClient(a.inference, a.learner, ids,
                           token=os.environ.get("RLVLA3_TOKEN"), tls=tls)
    # Everything else comes from the run: shapes, segment length, tasks.
    settings = client.settings()
    shape = client.shape = WireShape.from_settings(settings)
    rollout_len = settings.max_segment_decisions
    bad = [e for e in ids if e >= settings.num_envs]
    if bad:
        print("toy worker: env ids %s are not below the run's %d envs" %
              (bad, settings.num_envs), file=sys.stderr)
        client.close()
        return 2
    print("toy worker: %dx%d images, K=%d, %d decisions per segment, "
          "task 0 = %r" % (shape.height, shape.width, shape.chunk,
                           rollout_len, settings.instructions[0]))
    envs = {e: ToyEnv(a.seed + e, shape) for e in ids}
    obs = {e: envs[e].reset() for e in ids}
    pushed, rewards = 0, 0.0
    for index in range(a.segments):
        for e in ids:  # one env after another: a toy, not a fast worker
            seg = SegmentBuilder(e, task_id=0, shape=shape, run_id=a.seed + 1,
                                 index=index)
            for _ in range(rollout_len):
                reply = client.act(e, 0, *obs[e])
                reward, done = envs[e].step(reply.actions[0])
                seg.add(*obs[e], reply, reward, done, executed=1)
                rewards += reward
                obs[e] = envs[e].reset() if done else envs[e].observe()
            client.push(seg.build(bootstrap=obs[e]))
            pushed += 1
    counts = client.close()
    print("toy worker: pushed %d segments (learner accepted %d), "
          "mean reward %.2f, policy version %d" %
          (pushed, counts.accepted,
           rewards / max(1, pushed * rollout_len), client.version))
    return 0 if client.error is None else 1


if __name__ == "__main__":
    sys.exit(main())

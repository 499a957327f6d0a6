# Writes the seed corpus of peer_messages_fuzz (tests/fuzz/corpus/peer_messages):
# valid and invalid observations (ids, shapes, the cameras' names, order and
# count), sync notices and heartbeats, framed as the target reads them
# ([kind][length, 2 bytes LE][payload]). Run from the repository root with
# Debian's python3 (python3-protobuf).
import struct, sys
sys.path.insert(0, "services/python")
from rlvla3.v1 import rollout_pb2, services_pb2, tensor_pb2
out = "tests/fuzz/corpus/peer_messages/"
def rec(kind, msg):
    b = msg.SerializeToString()
    return bytes([kind]) + struct.pack("<H", len(b)) + b
def obs(env, task=0, h=4, w=3, p=2, names=("agentview", "wrist"), proprio=None):
    m = rollout_pb2.Observation(env_id=env, task_id=task)
    for n in names:
        im = m.images.add(); im.name = n
        im.rgb.dtype = tensor_pb2.DTYPE_UINT8 if hasattr(tensor_pb2, "DTYPE_UINT8") else 1
        im.rgb.shape.extend([h, w, 3]); im.rgb.data = bytes(h * w * 3)
    m.proprio.dtype = tensor_pb2.DTYPE_FLOAT32
    m.proprio.shape.extend([p])
    m.proprio.data = struct.pack("<%df" % p, *(proprio or [0.0] * p))
    return m
def notice(first, n, parked=()):
    m = rollout_pb2.Observation()
    m.notice.first_env_id = first; m.notice.num_envs = n; m.notice.parked_env_ids.extend(parked)
    return m
def beat(addr):
    b = services_pb2.HeartbeatRequest(address=addr); b.status.role = "rollout"; return b
seeds = {
 "valid_observations": rec(0, obs(0)) + rec(0, obs(1, 1)) + rec(0, obs(3)),
 "same_env_twice": rec(0, obs(2)) + rec(0, obs(2)),
 "bad_env_task_shape": rec(0, obs(9)) + rec(0, obs(0, 5)) + rec(0, obs(1, h=5)) + rec(0, obs(1, names=("agentview",))),
 "nan_proprio": rec(0, obs(0, proprio=[float("nan"), 1.0])),
 # The run's cameras are agentview, wrist (WireShape's default): another
 # order, a third camera, another name, none; then a valid one.
 "camera_names": rec(0, obs(0, names=("wrist", "agentview"))) + rec(0, obs(1, names=("agentview", "wrist", "sideview"))) + rec(0, obs(2, names=("agentview", "overhead"))) + rec(0, obs(3, names=())) + rec(0, obs(0)),
 "notices": rec(0, notice(0, 4, [1, 3])) + rec(0, notice(2, 9)) + rec(0, notice(0, 2, [7])) + rec(0, obs(0)),
 "heartbeats": rec(1, beat("10.0.0.1:5")) + rec(1, beat("")) + rec(1, beat("x" * 600)) + b"".join(rec(1, beat("h%d:1" % i)) for i in range(10)),
 "mixed": rec(1, beat("a:1")) + rec(0, obs(1)) + rec(0, notice(0, 4)) + rec(0, obs(1)) + rec(0, obs(2)),
}
for k, v in seeds.items():
    open(out + k, "wb").write(v)
print(len(seeds), "seeds")

"""rl-vla3 rollout client: an external simulator (written in Python) acts as a
rollout worker of an rl-vla3 run.

It speaks the same gRPC services as the C++ rollout worker: observations go to
an inference server on the bidirectional Act stream (one in flight per env),
finished segments go to the learner on the client-streaming PushSegments call,
and the learner's policy versions arrive on a versions-only SubscribeWeights
stream. The stubs it imports (rlvla3.v1, rlvla3_health) come with the
package: `pip install ./services/python`, no C++ build needed.

With `tls=Tls.from_files(cert, key, ca)` it speaks mutual TLS as the roles do
(cluster.tls_*). Like them, it refuses to send the token in plaintext to an
address off loopback unless `allow_plaintext_token=True`.

Example:
    client = RolloutClient(inference="127.0.0.1:50052",
                           learner="127.0.0.1:50051",
                           env_ids=[0, 1], token=os.environ.get("RLVLA3_TOKEN"))
    reply = client.act(env_id=0, task_id=0, agentview=img, wrist=img,
                       proprio=[0.0] * 8)
    seg = SegmentBuilder(env_id=0, task_id=0, shape=client.shape)
    seg.add(agentview, wrist, proprio, reply, reward=0.0, done=False,
            executed=4)
    client.push(seg.build(bootstrap=(agentview, wrist, proprio)))
    client.close()

Any run's cameras (RunSettings.cameras, e.g. a declared policy's three;
client.shape = WireShape.from_settings(client.settings()) reads them) go as
`images=`, one [H, W, 3] uint8 buffer per camera in that order, or a dict by
camera name; agentview= and wrist= serve a run of exactly those two. A wrong
count or name raises ValueError before anything is sent:
    reply = client.act(env_id=0, task_id=0, images=[front, wrist, side],
                       proprio=[0.0] * 8)
    seg.add(images=[front, wrist, side], proprio=..., reply=reply, ...)
    client.push(seg.build(bootstrap=([front, wrist, side], proprio)))
"""

from ._version import __version__  # noqa: F401
import dataclasses
import ipaddress
import queue
import struct
import threading
import time
from typing import Iterable, List, Optional, Sequence, Tuple

import grpc

from rlvla3.v1 import rollout_pb2, services_pb2, services_pb2_grpc, tensor_pb2
from rlvla3_health import health_pb2, health_pb2_grpc

__all__ = ["WireShape", "Reply", "RolloutClient", "SegmentBuilder", "Tls",
           "check_health"]


@dataclasses.dataclass(frozen=True)
class Tls:
    """This client's certificate and key, and the CA that signs the roles'
    (PEM bytes); server_name: the name checked in a server's certificate
    (cluster.tls_server_name), empty for the host dialled."""
    cert_chain: bytes
    private_key: bytes
    ca: bytes
    server_name: str = ""

    @staticmethod
    def from_files(cert: str, key: str, ca: str,
                   server_name: str = "") -> "Tls":
        def read(path):
            with open(path, "rb") as f:
                return f.read()
        return Tls(read(cert), read(key), read(ca), server_name)


def _is_loopback_host(host: str) -> bool:
    """A loopback IP literal or exactly `localhost`; `127.example.org` is a
    name, not a loopback address."""
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def _is_loopback(target: str) -> bool:
    """Whether every host `target` names is loopback (as the C++ roles'
    check): HOST:PORT, [V6]:PORT, dns:[//AUTHORITY/]HOST:PORT, ipv4:/ipv6:
    address lists (each entry), unix: sockets."""
    if target.startswith(("unix:", "unix-abstract:")):
        return True
    rest, entries = target, None
    if rest.startswith("dns:"):
        rest = rest[len("dns:"):]
        if rest.startswith("//"):
            authority_end = rest.find("/", 2)
            if authority_end < 0:
                return False
            rest = rest[authority_end + 1:]
        entries = [rest]
    elif rest.startswith(("ipv4:", "ipv6:")):
        entries = rest[len("ipv4:"):].split(",")
    else:
        entries = [rest]
    for e in entries:
        if e.startswith("["):
            close = e.find("]")
            if close < 0:
                return False
            host = e[:close + 1]
        elif e.count(":") == 1:
            host = e.split(":", 1)[0]
        else:
            host = e
        if not host or not _is_loopback_host(host):
            return False
    return bool(entries)


def _channel(target: str, tls: Optional[Tls], token: Optional[str],
             allow_plaintext_token: bool = False) -> grpc.Channel:
    """A channel to `target`: TLS with `tls`, else insecure; a token over
    plaintext off loopback is refused (ValueError) unless allowed."""
    if tls is None:
        if token and not allow_plaintext_token and not _is_loopback(target):
            raise ValueError(
                "%s: the token would cross the network in plaintext; pass "
                "tls=Tls.from_files(...) or allow_plaintext_token=True" %
                target)
        return grpc.insecure_channel(target)
    creds = grpc.ssl_channel_credentials(root_certificates=tls.ca,
                                         private_key=tls.private_key,
                                         certificate_chain=tls.cert_chain)
    options = ([("grpc.ssl_target_name_override", tls.server_name)]
               if tls.server_name else [])
    return grpc.secure_channel(target, creds, options=options)


@dataclasses.dataclass(frozen=True)
class WireShape:
    """What both ends agree on (the run's config)."""
    height: int = 64
    width: int = 64
    proprio_dim: int = 8
    chunk: int = 4
    action_dim: int = 7
    # The run's cameras, in message order (RunSettings.cameras).
    cameras: Tuple[str, ...] = ("agentview", "wrist")
    # How a taken action travels: uint8 bins, or float32 (a Gaussian sample;
    # bins above 256) -- RunSettings.action_tokens_dtype.
    tokens_dtype: int = tensor_pb2.DTYPE_UINT8

    @staticmethod
    def from_settings(s) -> "WireShape":
        """The shape a run's RunSettings describe."""
        return WireShape(height=s.image_height, width=s.image_width,
                         proprio_dim=s.proprio_dim, chunk=s.chunk,
                         action_dim=s.action_dim,
                         cameras=tuple(s.cameras) or ("agentview", "wrist"),
                         tokens_dtype=s.action_tokens_dtype or tensor_pb2.DTYPE_UINT8)


@dataclasses.dataclass
class Reply:
    env_id: int
    actions: List[List[float]]  # [K][A] in [-1, 1]
    tokens: bytes               # K * A taken, in WireShape.tokens_dtype
    log_probs: List[float]      # [K]
    value: float
    version: int


def _camera_images(shape: WireShape, images, agentview, wrist) -> List[bytes]:
    """One observation's images in the run's camera order: `images` (a
    sequence in that order, or a dict by camera name), or for a run of
    agentview and wrist the two keyword arguments. A count or names other
    than the run's raise ValueError (nothing is sent)."""
    cams = list(shape.cameras)
    if images is None:
        if cams != ["agentview", "wrist"]:
            raise ValueError("this run's cameras are %s (RunSettings.cameras): "
                             "pass images=[...] in that order" % ", ".join(cams))
        if agentview is None or wrist is None:
            raise ValueError("pass agentview and wrist, or images=[...] in the "
                             "run's camera order (agentview, wrist)")
        return [bytes(agentview), bytes(wrist)]
    if agentview is not None or wrist is not None:
        raise ValueError("pass images=... or agentview and wrist, not both")
    if isinstance(images, dict):
        if sorted(images) != sorted(cams):
            raise ValueError("images: cameras %s, expected %s "
                             "(RunSettings.cameras)" % (
                                 ", ".join(sorted(images)), ", ".join(cams)))
        return [bytes(images[c]) for c in cams]
    if isinstance(images, (bytes, bytearray, memoryview, str)):
        raise ValueError("images: one image per camera (%s), in that order, "
                         "not a single buffer" % ", ".join(cams))
    images = list(images)
    if len(images) != len(cams):
        raise ValueError("images: %d given, the run's cameras are %s "
                         "(RunSettings.cameras)" % (len(images), ", ".join(cams)))
    return [bytes(i) for i in images]


def _tensor(dtype: int, shape: Sequence[int], data: bytes) -> tensor_pb2.Tensor:
    return tensor_pb2.Tensor(dtype=dtype, shape=list(shape), data=data)


def _floats(values: Sequence[float]) -> bytes:
    return struct.pack("<%df" % len(values), *values)


def _metadata(token: Optional[str]):
    return (("authorization", "Bearer " + token),) if token else ()


def check_health(target: str, timeout: float = 5.0,
                 tls: Optional[Tls] = None) -> str:
    """grpc.health.v1 Check of a server: "SERVING", "NOT_SERVING", ..."""
    with _channel(target, tls, None) as ch:
        stub = health_pb2_grpc.HealthStub(ch)
        r = stub.Check(health_pb2.HealthCheckRequest(), timeout=timeout)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(r.status)


class RolloutClient:
    """One external rollout worker: Act stream, segment stream, versions."""

    def __init__(self, inference: str, learner: str, env_ids: Iterable[int],
                 token: Optional[str] = None,
                 shape: WireShape = WireShape(), timeout: float = 30.0,
                 tls: Optional[Tls] = None,
                 allow_plaintext_token: bool = False):
        self.shape = shape
        self.env_ids = set(env_ids)
        self._timeout = timeout
        md = _metadata(token)
        self._inference = _channel(inference, tls, token, allow_plaintext_token)
        self._learner = _channel(learner, tls, token, allow_plaintext_token)
        grpc.channel_ready_future(self._inference).result(timeout=timeout)
        grpc.channel_ready_future(self._learner).result(timeout=timeout)
        # Act: requests from a queue, replies routed per env.
        self._requests: "queue.Queue" = queue.Queue()
        self._replies = {e: queue.Queue(maxsize=1) for e in self.env_ids}
        inf = services_pb2_grpc.InferenceStub(self._inference)
        self._act = inf.Act(iter(self._requests.get, None), metadata=md)
        self._reader = threading.Thread(target=self._read_replies, daemon=True)
        self._reader.start()
        # PushSegments: a bounded queue (blocks when the learner is behind).
        self._segments: "queue.Queue" = queue.Queue(maxsize=8)
        lrn = services_pb2_grpc.LearnerStub(self._learner)
        self._push = lrn.PushSegments.future(iter(self._segments.get, None),
                                             metadata=md)
        # Versions only.
        self.version = 0
        self._versions = lrn.SubscribeWeights(
            services_pb2.WeightSubscription(versions_only=True), metadata=md)
        threading.Thread(target=self._read_versions, daemon=True).start()
        self._learner_stub = lrn
        self._md = md
        self.error: Optional[str] = None

    def _read_replies(self):
        try:
            for r in self._act:
                q = self._replies.get(r.env_id)
                if q is not None:
                    q.put(r)
        except grpc.RpcError as e:  # the stream ended (close or server gone)
            if e.code() != grpc.StatusCode.CANCELLED:
                self.error = "inference: %s" % e.details()

    def _read_versions(self):
        try:
            for u in self._versions:
                self.version = max(self.version, u.version)
        except grpc.RpcError:
            pass  # closed with the client

    def act(self, env_id: int, task_id: int, agentview: bytes = None,
            wrist: bytes = None, proprio: Sequence[float] = None, *,
            images=None) -> Reply:
        """Sends one observation and waits for its action chunk: `images`
        one [H, W, 3] buffer per camera in the run's order (shape.cameras),
        or a dict by camera name; or agentview and wrist for a run of those
        two. Raises ValueError for a camera count or names other than the
        run's (nothing sent), and with the server's message when it refuses
        the observation (INVALID_ARGUMENT naming the field)."""
        s = self.shape
        frames = _camera_images(s, images, agentview, wrist)
        obs = rollout_pb2.Observation(
            env_id=env_id, task_id=task_id, sent_unix_ns=time.time_ns(),
            proprio=_tensor(tensor_pb2.DTYPE_FLOAT32, [s.proprio_dim],
                            _floats(proprio)))
        for name, img in zip(s.cameras, frames):
            obs.images.add(name=name, rgb=_tensor(
                tensor_pb2.DTYPE_UINT8, [s.height, s.width, 3], img))
        self._requests.put(obs)
        r = self._replies[env_id].get(timeout=self._timeout)
        if r.error_code != 0:
            raise ValueError(r.error_message)
        k, a = s.chunk, s.action_dim
        flat = struct.unpack("<%df" % (k * a), r.actions.data)
        return Reply(env_id=r.env_id,
                     actions=[list(flat[i * a:(i + 1) * a]) for i in range(k)],
                     tokens=r.action_tokens.data,
                     log_probs=list(struct.unpack("<%df" % k, r.log_probs.data)),
                     value=r.value, version=r.policy_version)

    def push(self, segment: rollout_pb2.TrajectorySegment):
        """Queues a finished segment for the learner (blocks when full)."""
        self._segments.put(segment, timeout=self._timeout)

    def settings(self) -> services_pb2.RunSettings:
        """The run's settings (Learner.GetRunSettings): shapes, env ids,
        instruction table, pacing; see docs/simulators.md "Your own simulator"."""
        return self._learner_stub.GetRunSettings(services_pb2.StatusRequest(),
                                                 metadata=self._md, timeout=5)

    def learner_status(self) -> services_pb2.RoleStatus:
        return self._learner_stub.GetStatus(services_pb2.StatusRequest(),
                                            metadata=self._md, timeout=5)

    def close(self) -> services_pb2.PushSegmentsReply:
        """Ends both streams; returns the learner's counts of this client's
        segments. Raises grpc.RpcError (INVALID_ARGUMENT, naming the field)
        when the learner refused one: the segments after it were not read."""
        self._requests.put(None)
        self._segments.put(None)
        reply = self._push.result(timeout=self._timeout)
        self._versions.cancel()
        self._inference.close()
        self._learner.close()
        return reply


class SegmentBuilder:
    """Collects one env's decisions into a TrajectorySegment."""

    def __init__(self, env_id: int, task_id: int, shape: WireShape,
                 run_id: int = 0, index: int = 0):
        self.env_id, self.task_id, self.shape = env_id, task_id, shape
        self.run_id, self.index = run_id, index
        self._frames, self._proprio = [], []  # frames: per decision, per camera
        self._tokens, self._log_probs = [], []
        self._values, self._rewards, self._dones = [], [], []
        self._executed, self._versions = [], []

    def __len__(self):
        return len(self._rewards)

    def add(self, agentview: bytes = None, wrist: bytes = None,
            proprio: Sequence[float] = None, reply: Reply = None,
            reward: float = 0.0, done: bool = False, executed: int = 1, *,
            images=None):
        """One decision: its observation (`images`: one buffer per camera
        in the run's order, or a dict by camera name; or agentview and wrist
        for a run of those two), the reply, and what stepping it gave."""
        self._frames.append(_camera_images(self.shape, images, agentview, wrist))
        self._proprio.extend(proprio)
        self._tokens.append(reply.tokens)
        self._log_probs.extend(reply.log_probs)
        self._values.append(reply.value)
        self._rewards.append(reward)
        self._dones.append(1 if done else 0)
        self._executed.append(executed)
        self._versions.append(reply.version)

    def build(self, bootstrap=None, success: bool = False
              ) -> rollout_pb2.TrajectorySegment:
        """The segment; `bootstrap` = (images, proprio), images as add()
        takes them (or (agentview, wrist, proprio) for a run of those two),
        of the observation after the last decision when the episode goes
        on."""
        s, n = self.shape, len(self)
        frames, pr = list(self._frames), list(self._proprio)
        if bootstrap is not None:
            if len(bootstrap) == 2:
                frames.append(_camera_images(s, bootstrap[0], None, None))
            elif len(bootstrap) == 3:
                frames.append(_camera_images(s, None, bootstrap[0], bootstrap[1]))
            else:
                raise ValueError("bootstrap: (images, proprio), or (agentview, "
                                 "wrist, proprio) for a run of those two")
            pr.extend(bootstrap[-1])
        rows = len(frames)
        u8, f32, i64 = (tensor_pb2.DTYPE_UINT8, tensor_pb2.DTYPE_FLOAT32,
                        tensor_pb2.DTYPE_INT64)
        seg = rollout_pb2.TrajectorySegment(
            env_id=self.env_id, task_id=self.task_id, run_id=self.run_id,
            index=self.index, decisions=n, has_bootstrap=bootstrap is not None,
            ends_episode=bool(self._dones and self._dones[-1]),
            success=bool(success and self._dones and self._dones[-1]),
            episode_return=sum(self._rewards),
            proprio=_tensor(f32, [rows, s.proprio_dim], _floats(pr)),
            action_tokens=_tensor(s.tokens_dtype, [n, s.chunk, s.action_dim],
                                  b"".join(self._tokens)),
            behaviour_log_probs=_tensor(f32, [n, s.chunk],
                                        _floats(self._log_probs)),
            values=_tensor(f32, [n], _floats(self._values)),
            rewards=_tensor(f32, [n], _floats(self._rewards)),
            dones=_tensor(u8, [n], bytes(self._dones)),
            executed=_tensor(u8, [n], bytes(self._executed)),
            policy_versions=_tensor(i64, [n], struct.pack(
                "<%dq" % n, *self._versions)))
        for c, name in enumerate(s.cameras):
            seg.images.add(name=name, rgb=_tensor(
                u8, [rows, s.height, s.width, 3],
                b"".join(f[c] for f in frames)))
        return seg

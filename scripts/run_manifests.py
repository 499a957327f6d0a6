#!/usr/bin/python3
"""Runs a job's containers from what `rl-vla3 up CLUSTER.yaml --dry-run` renders.

  /usr/bin/python3 scripts/run_manifests.py [--cluster deploy/cluster.podman.yaml]
      [--binary build/services/rl-vla3]

No Kubernetes here, so podman stands in for it. Each pod of each StatefulSet and
Deployment becomes one container of the image. Each container gets the
manifest's own command, args ($(VAR) expanded as the kubelet does), env (the pod
index for RANK), user, volumes and ports. The volumes are:
  - the ConfigMap's files;
  - the token Secret, from CLUSTER.yaml's token_file;
  - a folder standing in for the checkpoint PVC.
The containers share one podman network. Static addresses, with host entries for
the Services' and the headless Service's names, stand in for cluster DNS.

Then it checks, in order:
  1. every container's readiness probe (its gRPC health port) answers SERVING;
  2. the learner's version advances;
  3. a rollout container killed with SIGKILL and started again, as its restart
     policy would, rejoins (SERVING, its version catches up) and the learner's
     version keeps advancing;
  4. once the learner has a checkpoint on the PVC folder, the learner
     container killed with SIGKILL and started again resumes from it
     (rl.resume auto): its first version is above every version it had
     published, versions advance, and the rollouts (not restarted) hear them.
Everything is removed at the end. Exit 0 when every check passed.

Podman runs with runc, the cgroupfs manager and no default ulimits, as in
scripts/build_image.sh. Build the image first: bash scripts/build_image.sh.
Not part of CI; see docs/kubernetes.md.
"""
import argparse
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "build", "python"),
                os.path.join(ROOT, "services", "python")]
import grpc  # noqa: E402
from rlvla3.v1 import services_pb2, services_pb2_grpc  # noqa: E402
from rlvla3_client import check_health  # noqa: E402

SUBNET = "10.89.77"
NETWORK = "rl-vla3-manifests"
UID = 10001


class Podman:
    def __init__(self, conf_dir):
        conf = os.path.join(conf_dir, "containers.conf")
        with open(conf, "w") as f:
            f.write("[containers]\ndefault_ulimits = []\n")
        self.env = dict(os.environ, CONTAINERS_CONF=conf)
        runc = shutil.which("runc") or "/usr/sbin/runc"
        self.base = ["podman", "--runtime", runc, "--cgroup-manager=cgroupfs"]

    def __call__(self, *args, check=True):
        r = subprocess.run(self.base + list(args), env=self.env,
                           capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"podman {' '.join(args[:3])}: {r.stderr.strip()}")
        return r.stdout.strip()


class Instance:
    """One pod of a workload: its container spec, index and address."""

    def __init__(self, workload, index, ip):
        self.kind = workload["kind"]
        self.component = workload["metadata"]["labels"][
            "app.kubernetes.io/component"]
        self.workload = workload["metadata"]["name"]
        self.name = f"{self.workload}-{index}"
        self.index = index
        self.ip = ip
        self.pod_spec = workload["spec"]["template"]["spec"]
        self.container = self.pod_spec["containers"][0]
        probe = self.container.get("readinessProbe", {}).get("grpc", {})
        self.port = probe.get("port")

    def env(self):
        out = {}
        for e in self.container.get("env", []):
            if "value" in e:
                out[e["name"]] = e["value"]
            elif "pod-index" in str(e.get("valueFrom", "")):
                out[e["name"]] = str(self.index)
            else:
                raise RuntimeError(f"{self.name}: env {e['name']}: "
                                   f"unsupported source {e.get('valueFrom')}")
        return out


def expand(arg, env):
    for k, v in env.items():
        arg = arg.replace(f"$({k})", v)
    return arg


def with_token(cluster, work):
    """CLUSTER.yaml with a fresh token_file and absolute paths, in `work`."""
    spec = yaml.safe_load(open(cluster))
    here = os.path.dirname(os.path.abspath(cluster))
    spec["config"] = os.path.join(here, spec["config"])
    token = os.path.join(work, "token.txt")
    with open(token, "w") as f:
        f.write(secrets.token_hex(16))
    spec["token_file"] = token
    # One host's podman network: the token may cross it in plaintext (TLS
    # would need the tls Secret mounted as well; not done here).
    spec["allow_plaintext_token"] = True
    out = os.path.join(work, "cluster.yaml")
    with open(out, "w") as f:
        yaml.safe_dump(spec, f)
    return out


def render(binary, cluster):
    r = subprocess.run([binary, "up", cluster, "--dry-run"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"up --dry-run: {r.stderr.strip()}")
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def host_names(instances, services, namespace):
    """Every name a container may dial, mapped to an instance's address."""
    names = {}
    by_component = {}
    for i in instances:
        by_component.setdefault(i.component, []).append(i)
    for s in services:
        name = s["metadata"]["name"]
        component = s["spec"]["selector"]["app.kubernetes.io/component"]
        members = by_component.get(component, [])
        if not members:
            continue
        for n in (name, f"{name}.{namespace}.svc.cluster.local"):
            names[n] = members[0].ip
        for i in members:  # the headless Service's per-pod names
            names[f"{i.name}.{name}"] = i.ip
            names[f"{i.name}.{name}.{namespace}.svc.cluster.local"] = i.ip
    return names


def volumes(docs, cluster, work):
    """Host folders for the ConfigMap, the token Secret and the PVC."""
    out = {}
    spec = yaml.safe_load(open(cluster))
    for d in docs:
        name = d["metadata"]["name"]
        if d["kind"] == "ConfigMap":
            path = os.path.join(work, "configmap-" + name)
            os.makedirs(path)
            for key, text in d["data"].items():
                with open(os.path.join(path, key), "w") as f:
                    f.write(text)
            out[("configMap", name)] = path
        elif d["kind"] == "Secret":
            path = os.path.join(work, "secret-" + name)
            os.makedirs(path)
            token_file = os.path.join(os.path.dirname(os.path.abspath(cluster)),
                                      spec["token_file"])
            token = open(token_file).read().strip()
            with open(os.path.join(path, "token"), "w") as f:
                f.write(token)
            out[("secret", name)] = path
            out["token"] = token
        elif d["kind"] == "PersistentVolumeClaim":
            path = os.path.join(work, "pvc-" + name)
            os.makedirs(path)
            out[("pvc", name)] = path
    for root, dirs, files in os.walk(work):
        for p in dirs + files:
            os.chown(os.path.join(root, p), UID, UID)
    return out


def run_container(podman, image, i, hosts, vols):
    sc = i.pod_spec.get("securityContext", {})
    args = ["run", "-d", "--name", i.name, "--network", NETWORK, "--ip", i.ip,
            "--user", f"{sc.get('runAsUser', UID)}:{sc.get('runAsGroup', UID)}"]
    for n, ip in sorted(hosts.items()):
        args += ["--add-host", f"{n}:{ip}"]
    env = i.env()
    for k, v in env.items():
        args += ["-e", f"{k}={v}"]
    by_name = {v["name"]: v for v in i.pod_spec.get("volumes", [])}
    for m in i.container.get("volumeMounts", []):
        v = by_name[m["name"]]
        if "configMap" in v:
            src = vols[("configMap", v["configMap"]["name"])]
        elif "secret" in v:
            src = vols[("secret", v["secret"]["secretName"])]
        else:
            src = vols[("pvc", v["persistentVolumeClaim"]["claimName"])]
        ro = ":ro" if m.get("readOnly") else ""
        args += ["-v", f"{src}:{m['mountPath']}{ro}"]
    command = i.container.get("command", [])
    args += ["--entrypoint", command[0], image] + command[1:]
    args += [expand(a, env) for a in i.container.get("args", [])]
    podman(*args)


def wait_serving(i, podman, deadline_s=120):
    end = time.time() + deadline_s
    last = "no answer"
    while time.time() < end:
        try:
            last = check_health(f"{i.ip}:{i.port}", timeout=2)
            if last == "SERVING":
                return last
        except grpc.RpcError as e:
            last = e.code().name
        time.sleep(1)
    logs = podman("logs", "--tail", "20", i.name, check=False)
    raise RuntimeError(f"{i.name}: {last} after {deadline_s} s\n{logs}")


def status(i, token, stub_name):
    with grpc.insecure_channel(f"{i.ip}:{i.port}") as ch:
        stub = getattr(services_pb2_grpc, stub_name)(ch)
        return stub.GetStatus(services_pb2.StatusRequest(), timeout=5,
                              metadata=[("authorization", f"Bearer {token}")])


def wait_version_past(learner, token, version, deadline_s=120):
    end = time.time() + deadline_s
    v = version
    while time.time() < end:
        v = status(learner, token, "LearnerStub").policy_version
        if v > version:
            return v
        time.sleep(1)
    raise RuntimeError(f"learner version stuck at {v} for {deadline_s} s")


def check_job(podman, instances, token):
    for i in instances:
        print(f"{i.name:28s} {i.ip}:{i.port}  {wait_serving(i, podman)}",
              flush=True)
    learner = next(i for i in instances if i.component == "learner")
    v0 = status(learner, token, "LearnerStub").policy_version
    v1 = wait_version_past(learner, token, v0 + 1)
    print(f"learner version {v0} -> {v1}", flush=True)
    victim = [i for i in instances if i.component == "rollout"][-1]
    podman("kill", "--signal", "KILL", victim.name)
    state = podman("inspect", "--format", "{{.State.Status}} exit "
                   "{{.State.ExitCode}}", victim.name)
    print(f"{victim.name}: SIGKILL -> {state}", flush=True)
    podman("start", victim.name)  # restartPolicy: Always
    print(f"{victim.name}: started again -> {wait_serving(victim, podman)}",
          flush=True)
    v2 = wait_version_past(learner, token, v1 + 1)
    rv = 0
    end = time.time() + 60
    while time.time() < end and rv < v1:
        rv = status(victim, token, "RolloutControlStub").policy_version
        time.sleep(1)
    print(f"learner version {v1} -> {v2}; {victim.name} (restarted) hears "
          f"version {rv}", flush=True)
    if rv < v1:
        raise RuntimeError(f"{victim.name} did not rejoin: version {rv}")


def newest_checkpoint(pvc, deadline_s):
    """The newest version_V folder with a MANIFEST under the PVC folder."""
    end = time.time() + deadline_s
    while time.time() < end:
        found = []
        for root, dirs, _ in os.walk(pvc):
            for d in dirs:
                if d.startswith("version_") and os.path.exists(
                        os.path.join(root, d, "MANIFEST")):
                    found.append(int(d[len("version_"):]))
        if found:
            return max(found)
        time.sleep(2)
    raise RuntimeError(f"no checkpoint under {pvc} within {deadline_s} s")


def check_learner_restart(podman, instances, token, pvc):
    learner = next(i for i in instances if i.component == "learner")
    ck = newest_checkpoint(pvc, 200)  # rl.checkpoint_every_s: 120 by default
    before = status(learner, token, "LearnerStub").policy_version
    podman("kill", "--signal", "KILL", learner.name)
    killed = time.time()
    print(f"{learner.name}: SIGKILL at version {before} (newest checkpoint: "
          f"version {ck})", flush=True)
    podman("start", learner.name)  # the StatefulSet's restart
    print(f"{learner.name}: started again -> "
          f"{wait_serving(learner, podman)}", flush=True)
    first = status(learner, token, "LearnerStub").policy_version
    if first <= before:
        raise RuntimeError(f"versions went backwards: {before} -> {first}")
    after = wait_version_past(learner, token, first)
    print(f"learner resumed at version {first} (> {before}), advancing: "
          f"{after}, {time.time() - killed:.0f} s after the kill", flush=True)
    for r in [i for i in instances if i.component == "rollout"]:
        rv = 0
        end = time.time() + 60
        while time.time() < end and rv < first:
            rv = status(r, token, "RolloutControlStub").policy_version
            time.sleep(1)
        print(f"{r.name} (not restarted) hears version {rv}", flush=True)
        if rv < first:
            raise RuntimeError(f"{r.name} did not rejoin: version {rv}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cluster",
                    default=os.path.join(ROOT, "deploy", "cluster.podman.yaml"))
    ap.add_argument("--binary",
                    default=os.path.join(ROOT, "build", "services", "rl-vla3"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run_manifests: run as root (podman with runc and cgroupfs)")
    work = tempfile.mkdtemp(prefix="rl-vla3-manifests-")
    cluster = with_token(a.cluster, work)
    docs = render(a.binary, cluster)
    namespace = docs[0]["metadata"]["name"]
    workloads = [d for d in docs if d["kind"] in ("StatefulSet", "Deployment")]
    services = [d for d in docs if d["kind"] == "Service"]
    image = workloads[0]["spec"]["template"]["spec"]["containers"][0]["image"]
    instances = []
    for w in workloads:
        for r in range(w["spec"].get("replicas", 1)):
            instances.append(Instance(w, r, f"{SUBNET}.{10 + len(instances)}"))
    podman = Podman(work)
    ok = False
    try:
        vols = volumes(docs, cluster, os.path.join(work, "volumes"))
        hosts = host_names(instances, services, namespace)
        podman("network", "rm", "-f", NETWORK, check=False)
        podman("network", "create", "--subnet", f"{SUBNET}.0/24", NETWORK)
        print(f"image {image}; {len(instances)} containers on network "
              f"{NETWORK}", flush=True)
        for i in instances:
            run_container(podman, image, i, hosts, vols)
        check_job(podman, instances, vols["token"])
        pvc = next(v for k, v in vols.items() if k[0] == "pvc")
        check_learner_restart(podman, instances, vols["token"], pvc)
        ok = True
    finally:
        if not ok:
            for i in instances:
                print(f"--- {i.name}\n" +
                      podman("logs", "--tail", "15", i.name, check=False))
        for i in instances:
            podman("rm", "-f", "-t", "5", i.name, check=False)
        podman("network", "rm", "-f", NETWORK, check=False)
        shutil.rmtree(work, ignore_errors=True)
    print("run_manifests: every check passed; everything stopped")


if __name__ == "__main__":
    main()

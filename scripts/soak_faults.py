#!/usr/bin/python3
"""A soak with faults: `rl-vla3 up --local` for a long run while the learner
and the inference server are killed with SIGKILL on a schedule, rollout
worker 0 is stopped with SIGSTOP (alive, silent: up's liveness probe must
restart it), and an attacker thread keeps hitting the run: observation
streams full of bad observations whose replies it never reads, and slowloris
connections on the learner's /metrics while it scrapes it.

  /usr/bin/python3 scripts/soak_faults.py [--out runs/soak] [--duration 1200]
      [--learner-every 180] [--inference-every 120] [--stop-rollout-every 300]
      [--attack-every 30] [--config configs/bench_cpu.yaml]
      [--binary build/services/rl-vla3] [--set KEY=VALUE ...]

It reads `up`'s progress line (one a second: version, optimizer steps) and
polls `rl-vla3 status` every 10 s, and prints:
  - the kill table: role, when, the version and steps at the kill, the
    seconds until the learner's optimizer steps advance again (its first
    update after the kill), the steps lost (steps at the kill minus the steps
    the resumed learner restored, from its log);
  - whether the versions seen by `up` and by `status` ever went backwards;
  - the resident memory of the role processes, first and last quarter.
  - the attacks: how many, the slowest /metrics scrape answered under 20
    slowloris connections, and bad observations sent per attack.
Exit 0 when the run reached its end, versions never went backwards, every
kill recovered and every scrape was answered.
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRESS = re.compile(r"^\[\s*(\d+)s\] version (\d+), (\d+) steps")
PID = re.compile(
    r"up: (learner|inference 0|rollout 0) (?:serving on \S+ |restarted )\(pid (\d+)")


def rss_kb(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def slowloris_and_scrape(port, result):
    """20 connections that send half a request and stall, then one scrape."""
    stalled = []
    try:
        for _ in range(20):
            c = socket.create_connection(("127.0.0.1", port), timeout=5)
            c.sendall(b"GET /met")
            stalled.append(c)
        t = time.time()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            body = b""
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                body += chunk
        ok = b"rlvla3_" in body
        result["scrapes"].append((time.time() - t) if ok else None)
    except ConnectionRefusedError:
        # The learner is not running (killed, restarting): no endpoint to
        # hold, counted apart from a scrape left unanswered.
        result["down"] += 1
    except OSError:
        result["scrapes"].append(None)
    finally:
        for c in stalled:
            c.close()


def bad_observations(target, result):
    """A stream of bad observations whose replies are never read."""
    sys.path.insert(0, os.path.join(ROOT, "services", "python"))
    try:
        import grpc
        from rlvla3.v1 import rollout_pb2, services_pb2_grpc
    except ImportError as e:
        result["skipped"] = str(e)
        return
    channel = grpc.insecure_channel(target)
    stub = services_pb2_grpc.InferenceStub(channel)
    bad = rollout_pb2.Observation(env_id=100000)
    bad.proprio.data = bytes(1024)
    sent = [0]

    def gen():
        for _ in range(20000):
            sent[0] += 1
            yield bad
    call = stub.Act(gen(), timeout=3)
    time.sleep(3)
    call.cancel()
    channel.close()
    result["bad_sent"].append(sent[0])


def attacker(a, stop, result):
    while not stop.wait(a.attack_every):
        slowloris_and_scrape(a.metrics_port, result)
        bad_observations(f"127.0.0.1:{int(a.base_port) + 1}", result)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="runs/soak")
    ap.add_argument("--duration", type=float, default=1200)
    ap.add_argument("--learner-every", type=float, default=180)
    ap.add_argument("--inference-every", type=float, default=120)
    ap.add_argument("--stop-rollout-every", type=float, default=300)
    ap.add_argument("--attack-every", type=float, default=30)
    ap.add_argument("--config", default="configs/bench_cpu.yaml")
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/services/rl-vla3"))
    ap.add_argument("--base-port", default="23000")
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    a.metrics_port = int(a.base_port) + 100  # the learner's /metrics
    # A fresh run (restarted learners resume: rl.resume stays auto).
    shutil.rmtree(os.path.join(a.out, "soak"), ignore_errors=True)
    os.makedirs(a.out, exist_ok=True)
    config = ["--config", a.config, "--set", f"run.out_dir={a.out}",
              "--set", "run.name=soak",
              "--set", f"cluster.base_port={a.base_port}",
              "--set", "cluster.liveness_timeouts=3",
              "--set", f"metrics.prometheus_port={a.metrics_port}"]
    for kv in a.set:
        config += ["--set", kv]
    log = open(os.path.join(a.out, "up.log"), "w")
    up = subprocess.Popen([a.binary, "up", "--local", *config, "--duration",
                           str(a.duration)], stdout=subprocess.PIPE,
                          stderr=log, text=True, bufsize=1)
    pids = {}
    t0 = time.time()
    last = {"version": 0, "steps": 0, "t": 0}
    backwards = []
    kills = []
    next_kill = {"learner": a.learner_every, "inference 0": a.inference_every,
                 "rollout 0": a.stop_rollout_every}
    every = {"learner": a.learner_every, "inference 0": a.inference_every,
             "rollout 0": a.stop_rollout_every}
    attacks = {"scrapes": [], "bad_sent": [], "down": 0}
    stop_attacks = threading.Event()
    attack = threading.Thread(target=attacker, args=(a, stop_attacks, attacks),
                              daemon=True)
    attack.start()
    status_versions = []
    next_status = 10
    rss = []
    next_rss = 30
    for line in up.stdout:
        line = line.rstrip("\n")
        m = PID.search(line)
        if m:
            pids[m.group(1)] = int(m.group(2))
        m = PROGRESS.match(line)
        if not m:
            continue
        t, version, steps = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if version < last["version"]:
            backwards.append((t, last["version"], version))
        last = {"version": version, "steps": steps, "t": t}
        for k in kills:
            if k["recovered_s"] is None and k["role"] == "learner" and \
                    steps > k["restored"] >= 0 and version > k["version"]:
                k["recovered_s"] = t - k["t"]
            if k["recovered_s"] is None and k["role"] == "inference 0" and \
                    version > k["version"]:
                k["recovered_s"] = t - k["t"]
            # A stopped worker recovers once up restarted it (a new pid).
            if k["recovered_s"] is None and k["role"] == "rollout 0" and \
                    pids.get("rollout 0") != k["pid"] and version > k["version"]:
                k["recovered_s"] = t - k["t"]
        for role, due in list(next_kill.items()):
            if t >= due and role in pids and t < a.duration - 60:
                # The rollout worker is stopped, not killed: alive and silent.
                os.kill(pids[role], signal.SIGSTOP if role == "rollout 0"
                        else signal.SIGKILL)
                kills.append({"role": role, "t": t, "version": version,
                              "steps": steps, "restored": -1,
                              "recovered_s": None, "pid": pids[role]})
                next_kill[role] = due + every[role]
        # The steps each resumed learner restored, from its log.
        learner_log = os.path.join(a.out, "soak", "logs", "learner.log")
        for k in kills:
            if k["role"] == "learner" and k["restored"] < 0 and \
                    os.path.exists(learner_log):
                with open(learner_log) as f:
                    # Each start resumes ("N steps taken") or, with no
                    # checkpoint yet, starts fresh (0 steps restored).
                    restored = [int(x) if x else 0 for x in re.findall(
                        r"(\d+) steps taken|no complete checkpoint", f.read())]
                n = sum(1 for x in kills if x["role"] == "learner")
                if len(restored) > n:
                    k["restored"] = restored[n]
        if t >= next_status:
            next_status = t + 10
            r = subprocess.run([a.binary, "status", *config],
                               capture_output=True, text=True)
            m2 = re.search(r"^learner\s+\S+\s+\S+\s+(\d+)", r.stdout, re.M)
            if m2:
                v = int(m2.group(1))
                if status_versions and v < status_versions[-1][1]:
                    backwards.append((t, status_versions[-1][1], v))
                status_versions.append((t, v))
        if t >= next_rss:
            next_rss = t + 30
            rss.append((t, rss_kb([p for p in pids.values()])))
    code = up.wait()
    stop_attacks.set()
    print(f"up exited {code} after {time.time() - t0:.0f} s; last progress "
          f"[{last['t']} s] version {last['version']}, {last['steps']} steps")
    print("\n| role | killed at (s) | version | steps | steps restored | steps "
          "lost | recovery (s) |")
    print("|---|---|---|---|---|---|---|")
    ok = code == 0 and not backwards
    for k in kills:
        lost = k["steps"] - k["restored"] if k["role"] == "learner" and \
            k["restored"] >= 0 else "-"
        rec = k["recovered_s"]
        ok = ok and rec is not None
        print(f"| {k['role']} | {k['t']} | {k['version']} | {k['steps']} | "
              f"{k['restored'] if k['role'] == 'learner' else '-'} | {lost} | "
              f"{rec if rec is not None else 'never'} |")
    answered = [x for x in attacks["scrapes"] if x is not None]
    ok = ok and len(answered) == len(attacks["scrapes"])
    print(f"\nattacks: {len(attacks['scrapes'])} rounds of 20 slowloris "
          f"connections on /metrics + a scrape: {len(answered)} answered, "
          f"slowest {max(answered) if answered else 0:.3f} s "
          f"({attacks['down']} more found the learner down); "
          f"bad observations per never-reading stream: "
          f"{min(attacks['bad_sent'], default=0)}-"
          f"{max(attacks['bad_sent'], default=0)}"
          + (f" (skipped: {attacks['skipped']})" if "skipped" in attacks
             else ""))
    print(f"\nversions going backwards (t, before, after): {backwards or 'none'}")
    print(f"status polls: {len(status_versions)}, versions "
          f"{status_versions[0][1] if status_versions else '-'} -> "
          f"{status_versions[-1][1] if status_versions else '-'}")
    if rss:
        q = max(1, len(rss) // 4)
        first = sum(r for _, r in rss[:q]) / q / 1024
        lastq = sum(r for _, r in rss[-q:]) / q / 1024
        print(f"RSS of the learner, inference and rollout processes (MiB): "
              f"first quarter {first:.0f}, "
              f"last quarter {lastq:.0f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A real Prometheus scrapes a real `rl-vla3 up --local` with the scrape config
shipped in deploy/prometheus/prometheus.yml, unchanged; the learner's trained
samples and the env frames are then read back through Prometheus' HTTP API.

    prometheus_live_test.py RL_VLA3 SOURCE_DIR WORK_DIR

Exit 0: passed (the query output printed), 1: failed, 77: skipped (no
prometheus binary: Debian's package `prometheus`; or the shipped config's
metrics ports 9464-9466 are taken on this machine).
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

METRICS_PORTS = (9464, 9465, 9466)  # learner, inference, rollout: the config's targets


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_taken(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def query(web, promql):
    url = "http://{}/api/v1/query?{}".format(web, urllib.parse.urlencode({"query": promql}))
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError("{}: {}".format(promql, body))
    return body["data"]["result"]


def value_of(result):
    return sum(float(r["value"][1]) for r in result)


def wait_for(what, fn, seconds):
    deadline = time.time() + seconds
    last = None
    while time.time() < deadline:
        try:
            last = fn()
            if last:
                return last
        except (OSError, RuntimeError) as e:  # not up yet
            last = e
        time.sleep(1)
    raise RuntimeError("timed out waiting for {} (last: {})".format(what, last))


def check_dashboard(web, src):
    """Every metric the shipped Grafana dashboard queries is one the roles serve."""
    url = "http://{}/api/v1/label/__name__/values".format(web)
    with urllib.request.urlopen(url, timeout=5) as r:
        served = set(json.load(r)["data"])
    with open(os.path.join(src, "deploy", "grafana", "rl-vla3.json")) as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    used = set(re.findall(r"rlvla3_[a-z0-9_]+", " ".join(exprs)))
    missing = sorted(used - served)
    print("dashboard: {} panels, {} metrics queried, all served: {}".format(
        len(dash["panels"]), len(used), not missing))
    if missing:
        print("FAIL: the dashboard queries metrics no role serves: {}".format(missing))
        return 1
    # Every panel's query, with the Job and Namespace variables as a user
    # picks them here (this job, All namespaces), is valid PromQL; the frames
    # panel shows this job's series, each labelled with it.
    names = [v["name"] for v in dash["templating"]["list"]]
    if sorted(names) != ["job", "namespace"]:
        print("FAIL: the dashboard's variables are {}, not job and namespace".format(names))
        return 1
    for e in exprs:
        q = e.replace("$namespace", ".*").replace("$job", "rl-vla3-local")
        result = query(web, q)
        if "rlvla3_env_frames_total" in e and (
                not result or any(r["metric"].get("job") != "rl-vla3-local" for r in result)):
            print("FAIL: {} gave {}".format(q, result))
            return 1
    other = query(web, exprs[0].replace("$namespace", ".*").replace("$job", "another-job"))
    if other:
        print("FAIL: the Job variable does not filter: {}".format(other))
        return 1
    print("dashboard: every query valid with job=rl-vla3-local; another job shows nothing")
    return 0


def main():
    binary, src, work = sys.argv[1:4]
    prometheus = shutil.which("prometheus")
    if not prometheus:
        print("SKIP: no prometheus on PATH (Debian: apt-get install prometheus)")
        return 77
    taken = [p for p in METRICS_PORTS if port_taken(p)]
    if taken:
        print("SKIP: ports {} are taken (the shipped config scrapes 9464-9466)".format(taken))
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    config = os.path.join(src, "deploy", "prometheus", "prometheus.yml")
    web = "127.0.0.1:{}".format(free_port())
    procs = []
    try:
        up = subprocess.Popen(
            [binary, "up", "--local", "--config", os.path.join(src, "configs", "bench_cpu.yaml"),
             "--duration", "90", "--set", "metrics.prometheus_port={}".format(METRICS_PORTS[0]),
             "--set", "cluster.base_port={}".format(free_port()),
             "--set", "run.out_dir=" + os.path.join(work, "runs")],
            stdout=open(os.path.join(work, "up.out"), "w"), stderr=subprocess.STDOUT,
            start_new_session=True)
        procs.append(up)
        prom = subprocess.Popen(
            [prometheus, "--config.file=" + config,
             "--storage.tsdb.path=" + os.path.join(work, "tsdb"),
             "--web.listen-address=" + web],
            stdout=open(os.path.join(work, "prometheus.log"), "w"), stderr=subprocess.STDOUT,
            start_new_session=True)
        procs.append(prom)
        print("prometheus {} with {}, up --local scraped at :{}".format(
            web, os.path.relpath(config, src), "/:".join(map(str, METRICS_PORTS))))
        targets = wait_for("three targets up", lambda: (
            lambda r: r if len(r) == 3 and all(x["value"][1] == "1" for x in r) else None)(
                query(web, 'up{job="rl-vla3-local"}')), 60)
        print("up: " + ", ".join("{}={}".format(t["metric"]["instance"], t["value"][1])
                                 for t in targets))
        trained = wait_for("trained samples > 0", lambda: (
            lambda r: r if r and value_of(r) > 0 else None)(
                query(web, "rlvla3_trained_samples_total")), 90)
        frames = wait_for("env frames > 0", lambda: (
            lambda r: r if r and value_of(r) > 0 else None)(
                query(web, "rlvla3_env_frames_total")), 30)
        for name, result in (("rlvla3_trained_samples_total", trained),
                             ("rlvla3_env_frames_total", frames)):
            for r in result:
                print("{}{} = {}".format(name, json.dumps(r["metric"], sort_keys=True),
                                         r["value"][1]))
        roles = {r["metric"].get("role") for r in trained}
        if "learner" not in roles:
            print("FAIL: trained samples come from {}, not the learner".format(roles))
            return 1
        rate = wait_for("two scrapes for a rate", lambda: query(
            web, "sum(rate(rlvla3_env_frames_total[30s]))"), 30)
        print("sum(rate(rlvla3_env_frames_total[30s])) = {}".format(rate[0]["value"][1]))
        return check_dashboard(web, src)
    except RuntimeError as e:
        print("FAIL: {}".format(e))
        for log in ("up.out", "prometheus.log"):
            with open(os.path.join(work, log)) as f:
                print("---- " + log + "\n" + f.read()[-3000:])
        return 1
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGINT)
                p.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


if __name__ == "__main__":
    sys.exit(main())

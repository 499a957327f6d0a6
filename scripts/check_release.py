#!/usr/bin/env python3
"""Release checks (tests/CMakeLists.txt runs each as a test):

  check_release.py versions --binary build/services/rl-vla3 [--build-dir build]
      One version everywhere: CMakeLists.txt's project(VERSION), `rl-vla3
      --version`, the rollout client's rlvla3_client/_version.py, the built
      rlvla3_envs/_version.py, CHANGELOG.md's newest heading, the image tags
      of docs/kubernetes.md and deploy/'s examples; and the licence
      the packages declare (Apache-2.0) is the LICENSE file's.
  check_release.py changelog
      The release habit: every entry of CHANGELOG.md sits under a version
      heading (no [Unreleased] entries), and, in a git checkout, the newest
      commit that changed what users see (the CLI, the config keys, the
      protocol, the Python packages, configs/, deploy/) is at or before the
      newest commit that changed CHANGELOG.md and no later than the newest
      heading's date: a user-visible change moves the log, and a change on
      a later day moves the version.
  check_release.py config-reference --binary build/services/rl-vla3
      docs/config.md is what `rl-vla3 config --reference` prints now
      (regenerate: build/services/rl-vla3 config --reference > docs/config.md).

Exit 0 when all hold, 1 naming each difference.
"""

import argparse
import difflib
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def py_version(path):
    with open(path) as f:
        m = re.search(r'__version__\s*=\s*"([^"]+)"', f.read())
    return m.group(1) if m else None


def versions(a):
    found = {}
    m = re.search(r"project\(rl-vla3\s+VERSION\s+([0-9.]+)", read("CMakeLists.txt"))
    found["CMakeLists.txt project(VERSION)"] = m.group(1) if m else None
    out = subprocess.run([a.binary, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"([0-9]+\.[0-9]+\.[0-9]+)", out)
    found["rl-vla3 --version"] = m.group(1) if m else None
    found["services/python/rlvla3_client/_version.py"] = py_version(
        os.path.join(ROOT, "services/python/rlvla3_client/_version.py"))
    envs = os.path.join(a.build_dir, "envs/python/rlvla3_envs/_version.py")
    if os.path.exists(envs):
        found["rlvla3_envs (built)"] = py_version(envs)
    m = re.search(r"^## \[([0-9.]+)\]", read("CHANGELOG.md"), re.M)
    found["CHANGELOG.md newest heading"] = m.group(1) if m else None
    # The image tags the docs and the example CLUSTER.yaml files name.
    for rel in ["docs/kubernetes.md", "deploy/Dockerfile",
                "deploy/cluster.example.yaml", "deploy/cluster.gpu.example.yaml"]:
        tags = set(re.findall(r"rl-vla3:([0-9]+\.[0-9]+\.[0-9]+)", read(rel)))
        for tag in sorted(tags):
            found["%s image tag rl-vla3:%s" % (rel, tag)] = tag
    want = found["CMakeLists.txt project(VERSION)"]
    bad = [k for k, v in found.items() if v != want]
    for k, v in found.items():
        print("{:45s} {}".format(k, v))
    licence = read("LICENSE")
    backend = read("services/python/_build/rlvla3_wheel.py")
    if "Apache License" not in licence or "Version 2.0" not in licence:
        bad.append("LICENSE is not the Apache License 2.0")
    if "License: Apache-2.0" not in backend:
        bad.append("the packages' metadata does not declare Apache-2.0")
    for b in bad:
        print("FAIL: {} differs from CMakeLists.txt's {}".format(b, want)
              if b in found else "FAIL: " + b)
    return 1 if bad else 0


USER_VISIBLE = ["services/verbs", "runtime/config.cc", "runtime/config.h",
                "proto", "envs/python/rlvla3_envs", "services/python/rlvla3_client",
                "configs", "deploy"]


def git(*args):
    p = subprocess.run(["git", "-C", ROOT] + list(args), capture_output=True,
                       text=True)
    return p.returncode, p.stdout.strip()


def changelog(a):
    text = read("CHANGELOG.md")
    bad = []
    m = re.search(r"^## \[Unreleased\]\s*$(.*?)(?=^## )", text, re.M | re.S)
    if m and re.search(r"^\s*- ", m.group(1), re.M):
        bad.append("CHANGELOG.md: entries under [Unreleased]: release them "
                   "under a version heading (and move the version)")
    m = re.search(r"^## \[([0-9.]+)\] - (\d{4}-\d{2}-\d{2})", text, re.M)
    if not m:
        bad.append("CHANGELOG.md: no '## [X.Y.Z] - YYYY-MM-DD' heading")
    rc, _ = git("rev-parse", "--git-dir")
    if m and rc == 0:
        _, user = git("log", "-1", "--format=%H %cs", "--", *USER_VISIBLE)
        _, log = git("log", "-1", "--format=%H", "--", "CHANGELOG.md")
        if user and log:
            commit, day = user.split()
            rc, _ = git("merge-base", "--is-ancestor", commit, log)
            if rc != 0:
                bad.append("commit %s changed what users see after the last "
                           "CHANGELOG.md change: add its entry" % commit[:10])
            if day > m.group(2):
                bad.append("commit %s (%s) changed what users see after the "
                           "newest version's date (%s): a new version and "
                           "heading" % (commit[:10], day, m.group(2)))
    elif rc != 0:
        print("not a git checkout: the commits are not checked")
    for b in bad:
        print("FAIL: " + b)
    if not bad:
        print("CHANGELOG.md: every entry released; newest %s - %s" % (
            m.group(1), m.group(2)))
    return 1 if bad else 0


def config_reference(a):
    now = subprocess.run([a.binary, "config", "--reference"], capture_output=True,
                         text=True, check=True).stdout
    page = read("docs/config.md")
    if page == now:
        print("docs/config.md is current ({} keys)".format(now.count("\n| `")))
        return 0
    sys.stdout.writelines(difflib.unified_diff(
        page.splitlines(True), now.splitlines(True), "docs/config.md",
        "rl-vla3 config --reference", n=1))
    print("FAIL: docs/config.md differs from the schema; regenerate it with\n"
          "  build/services/rl-vla3 config --reference > docs/config.md")
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("check", choices=["versions", "config-reference",
                                      "changelog"])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/services/rl-vla3"))
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    return {"versions": versions, "config-reference": config_reference,
            "changelog": changelog}[a.check](a)


if __name__ == "__main__":
    sys.exit(main())

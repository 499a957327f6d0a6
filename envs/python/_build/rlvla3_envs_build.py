"""PEP 517 backend of rlvla3_envs (envs/python): builds the compiled module
with the project's CMake build, then packs it with the rollout client's
standard-library wheel writer (services/python/_build/rlvla3_wheel.py).
Nothing is downloaded; the C++ dependencies are the project's own
(scripts/install_deps.sh).

    pip install ./envs/python                        # builds into ./build
    RLVLA3_BUILD_DIR=/path/to/build pip install ./envs/python

A build folder that exists is reused (its module must be for the installing
interpreter: pip's Python); a missing one is configured for that interpreter,
without tests or benchmarks.
"""

import glob
import os
import shutil
import subprocess
import sys
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)                      # envs/python
ROOT = os.path.dirname(os.path.dirname(PKG_ROOT))     # the checkout
sys.path.insert(0, os.path.join(ROOT, "services", "python", "_build"))
import rlvla3_wheel  # noqa: E402

SUMMARY = "rl-vla3's C++ MuJoCo env pool from Python (Gymnasium-style vector env)"


def _build_dir(config_settings):
    d = (config_settings or {}).get("build-dir") or os.environ.get("RLVLA3_BUILD_DIR")
    return os.path.abspath(d or os.path.join(ROOT, "build"))


def _build_module(build):
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.run(["cmake", "-S", ROOT, "-B", build] + gen + [
            "-DCMAKE_BUILD_TYPE=Release", "-DRLVLA3_BUILD_TESTS=OFF",
            "-DRLVLA3_BUILD_BENCHMARKS=OFF", "-DPYTHON_EXECUTABLE=" + sys.executable],
            check=True, stdout=sys.stderr)
    subprocess.run(["cmake", "--build", build, "--target", "rlvla3_envs_core",
                    "-j", str(os.cpu_count() or 1)], check=True, stdout=sys.stderr)
    pkg = os.path.join(build, "envs", "python", "rlvla3_envs")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    modules = glob.glob(os.path.join(pkg, "_core*.so"))
    if not any(m.endswith(suffix) for m in modules):
        raise RuntimeError(
            "{} holds {} but this Python ({}) loads _core{}: install with the "
            "pip of the Python the build was configured for, or set "
            "RLVLA3_BUILD_DIR to a new folder".format(
                pkg, [os.path.basename(m) for m in modules] or "no module",
                sys.executable, suffix))
    return pkg, [m for m in modules if m.endswith(suffix)][0]


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    pkg, module = _build_module(_build_dir(config_settings))
    version = rlvla3_wheel.read_version(os.path.join(pkg, "_version.py"))
    files = rlvla3_wheel.package_files(os.path.dirname(pkg), ["rlvla3_envs"])
    with open(module, "rb") as f:
        files.append(("rlvla3_envs/" + os.path.basename(module), f.read()))
    impl = "cp{}{}".format(*sys.version_info[:2])
    tag = "{}-{}-{}".format(impl, impl, sysconfig.get_platform().replace("-", "_").replace(".", "_"))
    req = "=={}.{}.*".format(*sys.version_info[:2])
    metadata = rlvla3_wheel.metadata_text(
        "rlvla3-envs", version, SUMMARY, req, ["numpy"])
    return rlvla3_wheel.write_wheel(wheel_directory, "rlvla3-envs", version,
                                    files, metadata, tag=tag, pure=False)

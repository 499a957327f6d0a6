"""A PEP 517 build backend for rl-vla3's Python packages that needs nothing
but the standard library: no setuptools, no `wheel`, nothing to download, so
`pip install` works offline with any Python 3.9+ and its own pip.

It builds the rollout client (services/python, pure Python: these hooks) and
gives envs/python's backend `write_wheel`, which packs the compiled module
the same way. The package's metadata is PACKAGE below; its version is
rlvla3_client/_version.py, kept equal to the project's by a test.
"""

import base64
import hashlib
import os
import re
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # services/python

PACKAGE = {
    "name": "rlvla3-client",
    "summary": "Python rollout client of rl-vla3: a simulator acts as a "
               "rollout worker over gRPC",
    "requires_python": ">=3.9",
    # The stubs come from protoc 3.21 (Python runtime 4.21) and grpcio-tools
    # 1.51: a runtime as new or newer within the same major.
    "requires": ["grpcio>=1.51,<2", "protobuf>=4.21,<5"],
    "packages": ["rlvla3_client", "rlvla3", "rlvla3/v1", "rlvla3_health"],
}


def read_version(path):
    with open(path) as f:
        m = re.search(r'__version__\s*=\s*"([^"]+)"', f.read())
    if not m:
        raise RuntimeError("no __version__ in " + path)
    return m.group(1)


def metadata_text(name, version, summary, requires_python, requires,
                  readme=None):
    lines = ["Metadata-Version: 2.1", "Name: " + name, "Version: " + version,
             "Summary: " + summary, "License: Apache-2.0",
             "Requires-Python: " + requires_python]
    lines += ["Requires-Dist: " + r for r in requires]
    text = "\n".join(lines) + "\n"
    if readme:
        text = text.replace("Summary:", "Description-Content-Type: text/markdown\nSummary:", 1)
        text += "\n" + readme
    return text


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "{},sha256={},{}".format(arcname, digest.decode(), len(data))


def write_wheel(wheel_directory, name, version, files, metadata,
                tag="py3-none-any", pure=True):
    """files: (archive name, bytes) pairs. Returns the wheel's file name."""
    dist = re.sub(r"[-_.]+", "_", name)
    info = "{}-{}.dist-info".format(dist, version)
    wheel_meta = ("Wheel-Version: 1.0\nGenerator: rlvla3_wheel\n"
                  "Root-Is-Purelib: {}\nTag: {}\n").format(
                      "true" if pure else "false", tag)
    entries = list(files) + [(info + "/METADATA", metadata.encode()),
                             (info + "/WHEEL", wheel_meta.encode())]
    record = [_record_line(a, d) for a, d in entries] + [info + "/RECORD,,"]
    entries.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    filename = "{}-{}-{}.whl".format(dist, version, tag)
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for arcname, data in entries:
            zi = zipfile.ZipInfo(arcname, date_time=(2026, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            z.writestr(zi, data)
    return filename


def package_files(root, packages):
    """(archive name, bytes) of every .py file of `packages` under root."""
    out = []
    for pkg in packages:
        d = os.path.join(root, pkg)
        for name in sorted(os.listdir(d)):
            if name.endswith(".py"):
                with open(os.path.join(d, name), "rb") as f:
                    out.append((pkg + "/" + name, f.read()))
    return out


def _client_metadata():
    version = read_version(os.path.join(ROOT, "rlvla3_client", "_version.py"))
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    p = PACKAGE
    return version, metadata_text(p["name"], version, p["summary"],
                                  p["requires_python"], p["requires"], readme)


# ---- PEP 517 hooks ------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version, metadata = _client_metadata()
    files = package_files(ROOT, PACKAGE["packages"])
    return write_wheel(wheel_directory, PACKAGE["name"], version, files, metadata)


def build_sdist(sdist_directory, config_settings=None):
    import tarfile
    import io
    version, metadata = _client_metadata()
    base = "rlvla3_client-" + version
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as t:
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(metadata.encode())
        t.addfile(info, io.BytesIO(metadata.encode()))
        for rel in ["pyproject.toml", "README.md", "_build/rlvla3_wheel.py"] + [
                a for a, _ in package_files(ROOT, PACKAGE["packages"])]:
            t.add(os.path.join(ROOT, rel), arcname=base + "/" + rel)
    return filename

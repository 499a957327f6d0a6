#!/usr/bin/env bash
# Builds the CPU image of deploy/Dockerfile from this checkout:
#   bash scripts/build_image.sh [TAG]        (default TAG: localhost/rl-vla3:dev)
# With a working docker it runs `docker build`. Otherwise podman (installed
# from Debian's archive when missing, as root or through sudo), and where no
# image registry is reachable, the Debian 12 base (`debian:12`) is made from
# Debian's archive with debootstrap and imported. Podman runs with runc, the
# cgroupfs manager and no default ulimits (a containers.conf of its own, for
# podman's calls only): with crun or its default ulimits every container failed
# on setrlimit / "cgroups in hybrid mode" on this project's VMs.
# Prints the build time and the image size. Not part of CI (about 20 min on 2
# cores): see docs/kubernetes.md.
set -euo pipefail
TAG="${1:-localhost/rl-vla3:dev}"
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  t0=$(date +%s)
  docker build -f deploy/Dockerfile -t "$TAG" .
  echo "build_image: $TAG built by docker in $(( $(date +%s) - t0 )) s," \
    "$(docker image inspect --format '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1/1e6}')"
  exit 0
fi

missing=()
for tool in podman:podman runc:runc debootstrap:debootstrap catatonit:catatonit; do
  name=${tool%%:*}
  command -v "$name" >/dev/null || [ -x "/usr/sbin/$name" ] || missing+=("${tool#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "build_image: installing ${missing[*]} (Debian's archive)"
  $SUDO apt-get update -q
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
fi

conf_dir=$(mktemp -d)
trap 'rm -rf "$conf_dir"' EXIT
printf '[containers]\ndefault_ulimits = []\n' > "$conf_dir/containers.conf"
POD=($SUDO env CONTAINERS_CONF="$conf_dir/containers.conf" podman
     --runtime "$(command -v runc || echo /usr/sbin/runc)" --cgroup-manager=cgroupfs)

base=docker.io/library/debian:12
if ! "${POD[@]}" image exists "$base"; then
  if ! timeout 60 "${POD[@]}" pull -q "$base" >/dev/null 2>&1; then
    echo "build_image: no image registry reachable: making $base from Debian's archive"
    root=$(mktemp -d)
    $SUDO debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
    $SUDO tar -C "$root" -c . | "${POD[@]}" import - "$base" >/dev/null
    $SUDO rm -rf "$root"
  fi
fi

t0=$(date +%s)
"${POD[@]}" build --network=host -f deploy/Dockerfile --build-arg RUNTIME_IMAGE="$base" -t "$TAG" .
size=$("${POD[@]}" image inspect --format '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1/1e6}')
echo "build_image: $TAG built by podman in $(( $(date +%s) - t0 )) s, $size"

#!/usr/bin/env bash
# The floors of the house (docs/development.md "Code layout and style"): a folder includes
# only project headers from its own floor or the floors below it.
#   runtime/                        the ground: runtime/ only (not its channels)
#   runtime/channels                the three queue levels: runtime/ and themselves
#   envs/, policies/                runtime/ and themselves (not each other)
#   envs/demos                      demonstration files: runtime/ and envs/
#   services/{rollout,inference,learner}   the roles: the floors below, themselves
#   services/engine                 the roles wired in one process
#   services/net, services/kube     the network and deploy layers: below + themselves
#   services/plan                   the cluster model: runtime/ and itself (pure computation)
#   services/options                the config becomes the roles' options: the roles, net, plan
#   services/runs                   what the verbs run: options, plan and everything below
#   services/verbs                  the command line: runs, options, kube, plan and below
#                                   (a verb never includes another verb's file)
# Third-party and generated headers (absl/, grpcpp/, rlvla3/v1/, torch/, ...)
# are not floors. Exits 1 listing every include that points up a floor.
# Also: services/runs reads no config key. A Config there is only handed on
# (to services/options, or written for a child process); every run takes the
# typed options services/options builds. Exits 1 naming each field read.
set -euo pipefail
cd "$(dirname "$0")/.."

# folder -> project folders its files may include (space-separated prefixes).
declare -A allowed=(
  [runtime]="runtime/"
  [runtime/channels]="runtime/"
  [envs]="runtime/ envs/"
  [envs/demos]="runtime/ envs/"
  [policies]="runtime/ policies/"
  [services/rollout]="runtime/ envs/ policies/ services/rollout/"
  [services/inference]="runtime/ policies/ services/inference/"
  [services/learner]="runtime/ policies/ services/learner/"
  [services/engine]="runtime/ envs/ policies/ services/rollout/ services/inference/ services/learner/ services/engine/"
  [services/net]="runtime/ envs/ policies/ services/net/"
  [services/kube]="runtime/ services/kube/"
  [services/plan]="runtime/ services/plan/"
  [services/options]="runtime/ envs/ policies/ services/rollout/ services/inference/ services/learner/ services/engine/ services/net/ services/plan/ services/options/"
  [services/runs]="runtime/ envs/ policies/ services/rollout/ services/inference/ services/learner/ services/engine/ services/net/ services/options/ services/plan/ services/runs/"
  [services/verbs]="runtime/ envs/ policies/ services/kube/ services/options/ services/plan/ services/runs/ services/verbs/verb.h services/verbs/verbs.h services/verbs/cli.h"
)
project='^(runtime|envs|policies|services)/'

# A floor's own files only: a sub-folder that is a floor of its own
# (runtime/channels) is checked with its own rule, and its parent may not
# include it.
declare -A denied=([runtime]="runtime/channels/" [envs]="envs/demos/")
declare -A skip_dirs=([runtime]="channels" [envs]="demos")

bad=0
for folder in "${!allowed[@]}"; do
  while IFS= read -r line; do
    file=${line%%:*}
    header=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"${line#*:}")
    [[ $header =~ $project ]] || continue
    ok=0
    for prefix in ${allowed[$folder]}; do
      if [[ $header == "$prefix"* ]]; then ok=1; break; fi
    done
    for prefix in ${denied[$folder]:-}; do
      if [[ $header == "$prefix"* ]]; then ok=0; fi
    done
    if [[ $ok == 0 ]]; then
      echo "check_layers: $file includes \"$header\", above its floor ($folder may include: ${allowed[$folder]})"
      bad=1
    fi
  done < <(grep -rHE '^#include "' "$folder" --include='*.h' --include='*.cc' \
             ${skip_dirs[$folder]:+--exclude-dir=${skip_dirs[$folder]}} | \
           sed -E 's/^([^:]+):[0-9]*:?/\1:/' || true)
done

# A name declared as a Config in a runs/ file, then followed by ".field".
for file in services/runs/*.h services/runs/*.cc; do
  names=$(grep -oE '\bConfig&? +[a-z_][a-z_0-9]*' "$file" | awk '{print $NF}' | sort -u || true)
  for name in $names; do
    while IFS= read -r hit; do
      echo "check_layers: $file:${hit%%:*} reads the config ($name.${hit#*:}): take it from an options struct built in services/options"
      bad=1
    done < <(grep -nE "^[^/]*\b$name\.[a-z_]+" "$file" | \
             sed -E "s/^([0-9]+):.*\b$name\.([a-z_]+).*/\1:\2/" || true)
  done
done
if [[ $bad != 0 ]]; then exit 1; fi
echo "check_layers: every include points at its own floor or one below; services/runs reads no config key"

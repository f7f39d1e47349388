#!/usr/bin/env bash
# Renders every kustomize overlay and example of deploy/k8s with
# `kubectl kustomize` and validates the rendered objects with validate-k8s.mjs:
# Kubernetes schemas, unknown fields, rlvr's rules (see its header), and the
# image each overlay renders for every container.
# Usage: check-k8s.sh [K8S_DIR]   (default: deploy/k8s beside this script)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
k8s="${1:-$here/../k8s}"
if ! command -v kubectl >/dev/null; then
  echo "FAIL: kubectl not found (package kubectl); run scripts/install-deploy-tools" >&2
  exit 1
fi
if [[ ! -d "$here/node_modules/kubernetes-models" ]]; then
  echo "FAIL: deploy/checks/node_modules missing; run scripts/install-deploy-tools" >&2
  exit 1
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cpu=registry.example.com/rlvr/rlvr:0.1.0
gpu=registry.example.com/rlvr/rlvr:0.1.0-cuda
# overlay directory -> the image all its containers must render.
declare -A image=(
  [base]=rlvr   # the placeholder every overlay maps
  [overlays/cpu-small]=$cpu
  [overlays/gpu]=$gpu
  [overlays/tls]=$cpu
  [monitoring]=""
  [examples/jobset]=$gpu
  [examples/pytorchjob]=$gpu
)
args=()
for dir in base overlays/cpu-small overlays/gpu overlays/tls monitoring examples/jobset examples/pytorchjob; do
  name="${dir//\//-}"
  if [[ ! -d "$k8s/$dir" ]]; then
    echo "FAIL: deploy/k8s/$dir is missing" >&2
    exit 1
  fi
  if ! kubectl kustomize "$k8s/$dir" >"$out/$name.yaml" 2>"$out/$name.err"; then
    echo "FAIL: kubectl kustomize deploy/k8s/$dir:" >&2
    cat "$out/$name.err" >&2
    exit 1
  fi
  echo "rendered deploy/k8s/$dir: $(grep -c '^kind:' "$out/$name.yaml") objects"
  args+=("$dir=$out/$name.yaml")
  [[ -n "${image[$dir]}" ]] && args+=(--expect-image "$dir=${image[$dir]}")
done
# Secrets the operator creates by hand (docs/deploy.md, step 3): TLS material
# and the bearer token never live in the repository.
exec node "$here/validate-k8s.mjs" --require-gpu overlays/gpu --require-gpu examples/jobset \
  --require-gpu examples/pytorchjob --external-secret rlvr-tls --external-secret rlvr-auth-token "${args[@]}"

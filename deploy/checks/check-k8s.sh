#!/usr/bin/env bash
# Renders every kustomize overlay of deploy/k8s with `kubectl kustomize` and
# validates the rendered objects (and the standalone examples) with
# validate-k8s.mjs: Kubernetes schemas, unknown fields, rlvr's rules.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
k8s="$here/../k8s"
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
args=()
for dir in base overlays/cpu-small overlays/gpu overlays/tls monitoring; do
  name="${dir//\//-}"
  if ! kubectl kustomize "$k8s/$dir" >"$out/$name.yaml" 2>"$out/$name.err"; then
    echo "FAIL: kubectl kustomize deploy/k8s/$dir:" >&2
    cat "$out/$name.err" >&2
    exit 1
  fi
  echo "rendered deploy/k8s/$dir: $(grep -c '^kind:' "$out/$name.yaml") objects"
  args+=("$dir=$out/$name.yaml")
done
for f in "$k8s"/examples/*.yaml; do
  args+=("examples/$(basename "$f")=$f")
done
exec node "$here/validate-k8s.mjs" --require-gpu overlays/gpu "${args[@]}"

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
# `kustomize edit set image rlvr=IMAGE` inside an overlay (docs/deploy.md)
# rewrites that overlay's `images: - name: rlvr` entry: do the same on a copy
# and check that every container of the overlay then renders IMAGE.
edit="$out/edit"
cp -r "$k8s" "$edit"
for dir in overlays/cpu-small overlays/gpu; do
  want="example.org/team/rlvr:edited-${dir##*/}"
  python3 - "$edit/$dir/kustomization.yaml" "$want" <<'PY'
import re, sys
path, image = sys.argv[1], sys.argv[2]
name, tag = image.rsplit(":", 1)
text = open(path).read()
m = re.search(r"(?m)^images:\n(?:(?:[ ]+.*|#.*)?\n)*?[ ]+- name: rlvr\n((?:[ ]{4,}\S.*\n)*)", text)
body = f"    newName: {name}\n    newTag: {tag}\n"
if m:  # update the entry, as kustomize does
    text = text[:m.start(1)] + body + text[m.end(1):]
elif re.search(r"(?m)^images:\n", text):  # add an entry
    text = re.sub(r"(?m)^images:\n", "images:\n  - name: rlvr\n" + body, text, count=1)
else:  # add the field
    text += "images:\n  - name: rlvr\n" + body
open(path, "w").write(text)
PY
  # The overlay itself, and the examples built on it (they take the learner's
  # image from the overlay's actor Deployment, so retagging the overlay as
  # documented retargets them too).
  followers=("$dir")
  [[ "$dir" == overlays/gpu ]] && followers+=(examples/jobset examples/pytorchjob)
  for f in "${followers[@]}"; do
    kubectl kustomize "$edit/$f" >"$out/edit.yaml"
    bad="$(grep -E '^ +image: ' "$out/edit.yaml" | grep -vF "image: $want" || true)"
    if [[ -n "$bad" ]]; then
      echo "FAIL: after \`kustomize edit set image rlvr=$want\` in deploy/k8s/$dir, containers of deploy/k8s/$f still render:" >&2
      echo "$bad" >&2
      exit 1
    fi
    echo "kustomize edit set image rlvr=... in deploy/k8s/$dir retargets all $(grep -cE '^ +image: ' "$out/edit.yaml") containers of deploy/k8s/$f"
  done
done
# Secrets the operator creates by hand (docs/deploy.md, step 3): TLS material
# and the bearer token never live in the repository.
node "$here/validate-k8s.mjs" --require-gpu overlays/gpu --require-gpu examples/jobset \
  --require-gpu examples/pytorchjob --external-secret rlvr-tls --external-secret rlvr-auth-token "${args[@]}"

#!/usr/bin/env bash
# promtool check config on deploy/prometheus/prometheus.yml (as is) and on
# prometheus-k8s.yml. Debian's prometheus is built without Kubernetes service
# discovery, so for prometheus-k8s.yml the kubernetes_sd_configs block is
# swapped for an equivalent file_sd block before checking: everything else
# (relabelling, rule files) is checked by the real promtool.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prom="$(cd "$here/../prometheus" && pwd)"
command -v promtool >/dev/null || { echo "FAIL: promtool not found (package prometheus)" >&2; exit 1; }
promtool check config "$prom/prometheus.yml"
# Every repository path the configs and rules name must exist.
root="$(cd "$here/../.." && pwd)"
missing=0
for f in "$prom"/*.yml "$prom"/rules/*.yml "$prom"/tests/*.yml; do
  for p in $(grep -oE '\b(deploy|docs|scripts|configs)/[A-Za-z0-9_./-]*[A-Za-z0-9_]' "$f" | sort -u); do
    if [[ ! -e "$root/$p" ]]; then
      echo "FAIL: ${f#"$root"/} names $p, which does not exist" >&2
      missing=1
    fi
  done
done
[[ $missing -eq 0 ]] || exit 1
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp -r "$prom/rules" "$tmp/rules"
python3 - "$prom/prometheus-k8s.yml" "$tmp/prometheus-k8s.yml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
new, n = re.subn(r"kubernetes_sd_configs:\n(\s+)- role: pod\n",
                 r"file_sd_configs:\n\1- files: [targets.json]\n", text)
if n != 1:
    sys.exit("FAIL: prometheus-k8s.yml: expected exactly one `kubernetes_sd_configs: - role: pod` block")
open(sys.argv[2], "w").write(new)
PY
echo '[]' > "$tmp/targets.json"
promtool check config "$tmp/prometheus-k8s.yml"
echo "(prometheus-k8s.yml checked with kubernetes_sd_configs replaced by file_sd: Debian's promtool lacks Kubernetes SD)"

#!/bin/sh
# The Debian packages a container needs to run BINARY: for every shared
# library `ldd BINARY` resolves, the package that owns it (dpkg -S, on the
# path or on the file the path links to). Writes one package per line, sorted,
# to OUT. Used by both Dockerfiles' build stages (Docker runs RUN lines with
# /bin/sh, dash on Debian: this script uses POSIX sh only and checks every
# step itself rather than relying on pipefail).
#
# Fails, naming each one, when a library is "not found" by ldd or no package
# owns it, instead of leaving it out of the image. Two kinds of library are
# not looked up, each named on the command line:
#   --provided DIR   libraries under DIR, which the Dockerfile copies into the
#                    runtime image itself (LibTorch's lib/ in the CUDA image);
#   --driver SONAME  libraries of the NVIDIA driver (libcuda.so.1, ...), which
#                    the NVIDIA container runtime mounts from the node.
# Usage: runtime-packages.sh BINARY OUT [--provided DIR]... [--driver SONAME]...
set -euf

if [ $# -lt 2 ]; then
  echo "usage: runtime-packages.sh BINARY OUT [--provided DIR]... [--driver SONAME]..." >&2
  exit 2
fi
binary=$1
out=$2
shift 2
provided=""
driver=""
while [ $# -gt 0 ]; do
  case "$1" in
    --provided) provided="$provided ${2%/}"; shift 2 ;;
    --driver) driver="$driver $2"; shift 2 ;;
    *) echo "runtime-packages: unknown argument $1" >&2; exit 2 ;;
  esac
done

if ! listing=$(ldd "$binary" 2>&1); then
  echo "runtime-packages: ldd $binary failed:" >&2
  echo "$listing" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
missing=""
skipped=""
# Pass 1: the resolved path (and the file it links to) of every library to
# look up, one "SONAME PATH REALPATH" line each.
: > "$tmp/libs"
while IFS= read -r line; do
  # "libx.so.1 => /path/libx.so.1 (0x...)", "libx.so.1 => not found",
  # "/lib64/ld-linux-x86-64.so.2 (0x...)", "linux-vdso.so.1 (0x...)".
  set -- $line
  [ $# -ge 1 ] || continue
  soname=$1
  path=""
  if [ "${2:-}" = "=>" ]; then
    if [ "${3:-}" = "not" ]; then
      case " $driver " in
        *" $soname "*) skipped="$skipped $soname(driver)"; continue ;;
      esac
      missing="$missing
  $soname: not found by ldd"
      continue
    fi
    path=${3:-}
  else
    case "$soname" in
      /*) path=$soname ;;
      *) continue ;;  # the vDSO: no file
    esac
  fi
  case " $driver " in
    *" $soname "*) skipped="$skipped $soname(driver)"; continue ;;
  esac
  in_provided=""
  for dir in $provided; do
    case "$path" in
      "$dir"/*) in_provided=yes ;;
    esac
  done
  if [ -n "$in_provided" ]; then
    skipped="$skipped $soname(copied)"
    continue
  fi
  real=$(readlink -f "$path") || real=$path
  printf '%s %s %s\n' "$soname" "$path" "$real" >> "$tmp/libs"
done <<EOF
$listing
EOF

# Pass 2: one dpkg -S for every path ("pkg[:arch][, pkg]: path" per owned
# path; unowned paths only make it exit non-zero, which pass 3 reports).
if [ -s "$tmp/libs" ]; then
  # shellcheck disable=SC2046
  dpkg -S $(awk '{print $2; print $3}' "$tmp/libs" | sort -u) > "$tmp/owners" 2>/dev/null || true
else
  : > "$tmp/owners"
fi
# Pass 3: each library's package, or the reason it has none.
awk -v out="$tmp/packages" -v bad="$tmp/unowned" '
  FNR == NR {
    if ($0 ~ /^diversion /) next
    i = index($0, ": ")
    if (i == 0) next
    pkg = substr($0, 1, i - 1); path = substr($0, i + 2)
    sub(/,.*/, "", pkg); sub(/:.*/, "", pkg)
    owner[path] = pkg
    next
  }
  {
    pkg = ($2 in owner) ? owner[$2] : (($3 in owner) ? owner[$3] : "")
    if (pkg == "") print "  " $1 " (" $2 "): no installed package owns it" > bad
    else print pkg > out
  }' "$tmp/owners" "$tmp/libs"
if [ -s "$tmp/unowned" ]; then
  missing="$missing
$(cat "$tmp/unowned")"
fi

if [ -n "$missing" ]; then
  echo "runtime-packages: $binary needs libraries that no package provides:$missing" >&2
  echo "runtime-packages: install them from a package (scripts/bootstrap), or copy them into the image and pass --provided" >&2
  exit 1
fi
if [ ! -s "$tmp/packages" ]; then
  echo "runtime-packages: ldd $binary listed no library" >&2
  exit 1
fi
sort -u "$tmp/packages" > "$out"
echo "runtime-packages: $(wc -l < "$out") packages for $binary${skipped:+ (not looked up:$skipped)}"

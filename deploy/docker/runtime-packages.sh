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

packages=""
missing=""
skipped=""
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
  owner=""
  for candidate in "$path" "$(readlink -f "$path")"; do
    if found=$(dpkg -S "$candidate" 2>/dev/null); then
      owner=${found%%:*}
      break
    fi
  done
  if [ -z "$owner" ]; then
    missing="$missing
  $soname ($path): no installed package owns it"
    continue
  fi
  case " $packages " in
    *" $owner "*) ;;
    *) packages="$packages $owner" ;;
  esac
done <<EOF
$listing
EOF

if [ -n "$missing" ]; then
  echo "runtime-packages: $binary needs libraries that no package provides:$missing" >&2
  echo "runtime-packages: install them from a package (scripts/bootstrap), or copy them into the image and pass --provided" >&2
  exit 1
fi
if [ -z "$packages" ]; then
  echo "runtime-packages: ldd $binary listed no library" >&2
  exit 1
fi
printf '%s\n' $packages | sort -u > "$out"
echo "runtime-packages: $(wc -l < "$out") packages for $binary${skipped:+ (not looked up:$skipped)}"

#!/usr/bin/env bash
# tasks.sh [outdir] puts the data of the tabular task (coordinator/flsim
# -task tabular) in outdir (default data/diamonds, kept out of git): the
# lazy-load database of Debian's r-cran-ggplot2, which holds R's diamonds
# table (53,940 rows). The package is downloaded with apt-get download and
# unpacked with dpkg-deb (R itself is not installed: shared/dataset/rdata
# reads the database). The text task's word lists (wamerican, wngerman,
# wfrench, wspanish, witalian) are installed by scripts/setup.sh.
# Idempotent: nothing is fetched if outdir already holds the database.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(realpath -m "${1:-$root/data/diamonds}")"
if [ -f "$out/Rdata.rdb" ] && [ -f "$out/Rdata.rdx" ]; then
  echo "tasks: $out already holds the diamonds database" >&2
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# apt-get download writes to the current directory; _apt cannot write to
# a private temporary directory, which only costs a warning.
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
fetch() { (cd "$tmp" && apt-get download r-cran-ggplot2 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true); }
fetch
deb="$(ls "$tmp"/r-cran-ggplot2_*.deb 2>/dev/null | head -n1)"
if [ -z "$deb" ]; then
  # The package lists may be missing or stale on a fresh machine.
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq >&2 || true
  fetch
  deb="$(ls "$tmp"/r-cran-ggplot2_*.deb 2>/dev/null | head -n1)"
fi
if [ -z "$deb" ]; then
  echo "tasks: could not download r-cran-ggplot2 (is apt configured? try: apt-get update)" >&2
  exit 1
fi
dpkg-deb -x "$deb" "$tmp/x"
src="$tmp/x/usr/lib/R/site-library/ggplot2"
mkdir -p "$out"
cp "$src/data/Rdata.rdb" "$src/data/Rdata.rdx" "$src/DESCRIPTION" "$out/"
cp "$tmp/x/usr/share/doc/r-cran-ggplot2/copyright" "$out/copyright" 2>/dev/null || true
echo "tasks: wrote the diamonds database ($(basename "$deb")) to $out" >&2

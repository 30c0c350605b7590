#!/usr/bin/env bash
# setup.sh installs what the project needs on a fresh Debian machine:
# the Fashion-MNIST dataset package (the default real dataset) and, when
# asked with --browser, Debian's Chromium and ChromeDriver for browser tests
# and zbar-tools (zbarimg decodes the dashboard's QR code in a test).
# It is idempotent: anything already present is left alone.
set -euo pipefail

need=()
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || need+=(dataset-fashion-mnist)
if [ "${1:-}" = "--browser" ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
  command -v zbarimg >/dev/null 2>&1 || need+=(zbar-tools)
fi

if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

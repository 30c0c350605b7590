#!/usr/bin/env bash
# setup.sh installs what the project needs on a fresh Debian machine:
# the Fashion-MNIST dataset package (the default real dataset), the word
# lists of the text task and, through scripts/tasks.sh, the tabular task's
# data (data/diamonds); with --browser also the three browser engines the
# browser tests run in (Debian's Chromium and ChromeDriver; Firefox ESR,
# driven over its own WebDriver BiDi server; WebKitGTK's WebKitWebDriver
# and MiniBrowser, run in Xvfb) and zbar-tools (zbarimg decodes the
# dashboard's QR code).
# SETUP_TASKS names the tasks to prepare (default: all of fashion, text,
# tabular; make run asks only for the ones its flags need). The digits
# task's data is scripts/mnist.sh's.
# It is idempotent: anything already present is left alone.
set -euo pipefail

tasks=" ${SETUP_TASKS:-fashion text tabular} "
need=()
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || need+=(dataset-fashion-mnist)
# The text task's word lists (shared/task: -task text).
if [[ $tasks == *" text "* ]]; then
  for pair in wamerican:american-english wngerman:ngerman wfrench:french wspanish:spanish witalian:italian; do
    [ -f "/usr/share/dict/${pair#*:}" ] || need+=("${pair%%:*}")
  done
fi
if [ "${1:-}" = "--browser" ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
  command -v zbarimg >/dev/null 2>&1 || need+=(zbar-tools)
  command -v firefox-esr >/dev/null 2>&1 || need+=(firefox-esr)
  command -v WebKitWebDriver >/dev/null 2>&1 || need+=(webkit2gtk-driver)
  command -v Xvfb >/dev/null 2>&1 || need+=(xvfb)
fi

if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  # Another install (unattended upgrades, a second terminal) may hold the
  # package manager's lock: wait for it, up to 10 minutes, instead of
  # failing at once.
  # (apt-get install honours DPkg::Lock::Timeout; apt-get update does not
  # for its lists lock, so it is retried.)
  wait_lock=(-o DPkg::Lock::Timeout=600)
  for try in $(seq 1 120); do
    if out=$($SUDO apt-get "${wait_lock[@]}" update -qq 2>&1); then
      break
    fi
    case "$out" in
      *"Could not get lock"* | *"Unable to lock"*)
        [ "$try" -gt 1 ] || echo "setup: another package install is running; waiting for it (up to 10 minutes)" >&2
        [ "$try" -lt 120 ] || { echo "$out" >&2; exit 1; }
        sleep 5 ;;
      *) echo "$out" >&2; exit 1 ;;
    esac
  done
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${wait_lock[@]}" install -y -qq "${need[@]}" >/dev/null
fi

if [[ $tasks == *" tabular "* ]]; then
  bash "$(dirname "$0")/tasks.sh"
fi

#!/usr/bin/env bash
# Debian's Chromium for the real-browser test (tests/test_browser.py drives it with Playwright
# for Python through executable_path). Idempotent: does nothing when it is already there.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "chromium: $(/usr/bin/chromium --version 2>/dev/null || echo present)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium
/usr/bin/chromium --version

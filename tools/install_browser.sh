#!/usr/bin/env bash
# What the real-browser test needs from Debian: Chromium (tests/test_browser.py drives it with
# Playwright for Python through executable_path) and a CJK font, so the Korean UI renders in
# Hangul rather than boxes (Streamlit's own fonts have no Hangul; Chromium falls back to what
# fontconfig offers). Idempotent: installs only what is missing.
set -euo pipefail
missing=()
if [ ! -x /usr/bin/chromium ]; then
  missing+=(chromium)
fi
if ! fc-list :lang=ko family 2>/dev/null | grep -q "Noto Sans CJK"; then
  missing+=(fonts-noto-cjk fontconfig)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fc-cache -f >/dev/null 2>&1 || true
fi
echo "chromium: $(/usr/bin/chromium --version 2>/dev/null || echo present)"
echo "Korean font: $(fc-match -f '%{family[0]}' 'sans-serif:lang=ko')"

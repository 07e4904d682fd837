#!/bin/sh
# Install Debian's Chromium for the browser tests (tests/test_browser.py), if it is missing.
# Idempotent and non-interactive. Never downloads a browser of its own: Playwright drives
# /usr/bin/chromium from the distribution's packages.
set -eu

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
    echo "install-browser: $CHROMIUM already present, nothing to do ($("$CHROMIUM" --version 2>/dev/null || echo 'version unknown'))"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-browser: $CHROMIUM is missing and this user cannot install packages (not root, no sudo)" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-browser: $CHROMIUM missing; installing Debian package chromium with apt-get"
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium

if [ ! -x "$CHROMIUM" ]; then
    echo "install-browser: apt-get finished but $CHROMIUM is still missing" >&2
    exit 1
fi
echo "install-browser: installed $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"

#!/usr/bin/env bash
# Debian's Chromium, for the test that renders the report's page as a reader sees it
# (tests/report/test_report_browser.py drives it through Playwright's executable_path: Playwright's
# own browser download is not used). Installed only where it is missing; needs apt-get and root.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    echo "== chromium present: $(chromium --version 2>/dev/null | head -n 1)"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-browser: no apt-get here; install Chromium by hand (the browser test fails under CI without it)" >&2
    exit 1
fi
echo "== installing chromium (Debian package)"
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
chromium --version 2>/dev/null | head -n 1

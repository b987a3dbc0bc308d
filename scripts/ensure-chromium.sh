#!/bin/sh
# Before `npm test`: the operator console's browser test drives Debian's Chromium at
# /usr/bin/chromium (test/integration/console-browser.test.ts); nothing is downloaded.
# Missing, and running as root with apt: install it. Missing otherwise: say how, and go
# on (every other test runs; the browser test fails with the same advice).
[ -x /usr/bin/chromium ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
  echo "npm test: installing Debian's chromium for the console's browser test (apt-get)" >&2
  apt-get update -q > /dev/null && apt-get install -y -q --no-install-recommends chromium > /dev/null && exit 0
  echo "npm test: apt-get could not install chromium; the console's browser test will fail" >&2
  exit 0
fi
echo "npm test: /usr/bin/chromium is missing, and the console's browser test needs it: install Debian's package as root (apt-get install chromium), then run npm test again" >&2
exit 0

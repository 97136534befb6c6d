#!/usr/bin/env bash
# What the test suite needs besides Python packages: PostgreSQL and Redis on 127.0.0.1 (this
# machine kind starts them; start them if they are down) and Debian's Chromium + ChromeDriver
# for the dashboard's browser test.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  echo "tests/services.sh: starting PostgreSQL (a system service: as root$([ "$(id -u)" = 0 ] || echo ', through sudo'))"
  as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
fi
if ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
  echo "tests/services.sh: starting Redis (as root$([ "$(id -u)" = 0 ] || echo ', through sudo'): its directory is /var/lib/redis)"
  as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
# Only when missing, and said before it happens: apt-get installs system packages, so it needs root
# (sudo asks for a password unless this already runs as root). CI_REGISTRAR_NO_BROWSER=1 skips it:
# the browser tests are then skipped, and say why.
if [ "${CI_REGISTRAR_NO_BROWSER:-}" != 1 ] && { [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; }; then
  echo "tests/services.sh: installing Debian's chromium and chromium-driver with apt-get, for the browser tests" \
       "(tests/app/test_*_browser.py: the pages and README.md's screenshots in headless Chromium)."
  echo "tests/services.sh: apt-get installs system packages, so this runs as root$([ "$(id -u)" = 0 ] || echo ' through sudo')." \
       "CI_REGISTRAR_NO_BROWSER=1 skips it (and those tests)."
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi

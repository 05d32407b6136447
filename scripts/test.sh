#!/usr/bin/env bash
# The one test command (README: `make test`). It installs what the tests need
# where it is missing — Debian's kcat and python3-kafka, npm's kafkajs — and
# runs every test under the race detector (about 6 minutes on 2 cores). Long
# soak and fault runs stay behind KMIRROR_LONG=1.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v kcat >/dev/null 2>&1 || need_apt+=(kcat)
# The race detector links C code: it needs cgo and a C compiler.
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
/usr/bin/python3 -c 'import kafka' >/dev/null 2>&1 || need_apt+=(python3-kafka)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${need_apt[*]}"
    apt-get install -y -q "${need_apt[@]}" >/dev/null 2>&1 ||
      { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${need_apt[@]}" >/dev/null; }
  else
    echo "missing ${need_apt[*]}: install them (apt-get install ${need_apt[*]}) or run as root" >&2
    exit 1
  fi
fi

if [ -f test/js/package.json ] && [ ! -d test/js/node_modules/kafkajs ]; then
  echo "installing kafkajs"
  (cd test/js && npm install --no-audit --no-fund --silent >/dev/null)
fi

go vet ./...
race=(-race)
if [ "$(go env CGO_ENABLED)" != 1 ]; then
  echo "cgo is off (CGO_ENABLED=$(go env CGO_ENABLED)): running the tests without the race detector" >&2
  race=()
fi
exec go run gotest.tools/gotestsum@v1.13.0 --format pkgname-and-test-fails -- \
  "${race[@]}" -timeout 24m -count=1 "$@" ./...

#!/usr/bin/env bash
# The one test command (README: `make test`). It installs what the tests need
# where it is missing — Debian's kcat, python3-kafka, a Java 17 JDK and
# Maven, npm's kafkajs, the Apache Kafka 4.4.0 jars (test/kafka/pom.xml) —
# and runs every test under the race detector (about 6 minutes on 2 cores).
# Long soak and fault runs stay behind KMIRROR_LONG=1.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v kcat >/dev/null 2>&1 || need_apt+=(kcat)
# The Apache Kafka test bed (internal/testcluster/kafkacluster) runs the
# release jars on Java 17; Maven copies them into this cache once.
export KMIRROR_KAFKA_LIBS="${KMIRROR_KAFKA_LIBS:-$HOME/.cache/kmirror/kafka-4.4.0/libs}"
kafka_jar="$KMIRROR_KAFKA_LIBS/kafka_2.13-4.4.0.jar"
# test/javaclients compiles its Java programs: javac comes with the JDK,
# which holds the JRE.
command -v javac >/dev/null 2>&1 || need_apt+=(openjdk-17-jdk-headless)
[ -f "$kafka_jar" ] || command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
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

if [ ! -f "$kafka_jar" ]; then
  # Copied aside and moved in with the broker jar last, so that an
  # interrupted copy is done again next time.
  echo "copying the Apache Kafka 4.4.0 jars into $KMIRROR_KAFKA_LIBS"
  partial="$KMIRROR_KAFKA_LIBS.partial"
  rm -rf "$partial"
  mvn -q -B -f test/kafka/pom.xml dependency:copy-dependencies -DoutputDirectory="$partial"
  mkdir -p "$KMIRROR_KAFKA_LIBS"
  find "$partial" -name '*.jar' ! -name "$(basename "$kafka_jar")" -exec mv -f {} "$KMIRROR_KAFKA_LIBS/" \;
  mv -f "$partial/$(basename "$kafka_jar")" "$kafka_jar"
  rm -rf "$partial"
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

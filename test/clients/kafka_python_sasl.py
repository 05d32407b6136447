#!/usr/bin/python3
"""kafka-python over SASL/PLAIN for kmirror's external-client tests.

Produces COUNT records to TOPIC (record i: key "k-<i>", value "sasl-<i>")
and reads them back with a group-less KafkaConsumer, both authenticated with
SASL/PLAIN on a SASL_PLAINTEXT listener as KMIRROR_SASL_USER with password
KMIRROR_SASL_PASSWORD (environment, so the password is not on the command
line). Prints a JSON summary on success; exits 1 with the reason otherwise.

Usage: /usr/bin/python3 kafka_python_sasl.py BOOTSTRAP TOPIC COUNT
"""

import json
import os
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

DEADLINE_SECONDS = 60


def fail(msg):
    sys.stderr.write("kafka_python_sasl: %s\n" % msg)
    sys.exit(1)


def security():
    return dict(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username=os.environ["KMIRROR_SASL_USER"],
        sasl_plain_password=os.environ["KMIRROR_SASL_PASSWORD"],
    )


def main():
    if len(sys.argv) != 4:
        fail("usage: kafka_python_sasl.py BOOTSTRAP TOPIC COUNT")
    bootstrap = sys.argv[1].split(",")
    topic = sys.argv[2]
    count = int(sys.argv[3])

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=5, **security())
    futures = [producer.send(topic, key=("k-%d" % i).encode(), value=("sasl-%d" % i).encode()) for i in range(count)]
    producer.flush(timeout=DEADLINE_SECONDS)
    for i, f in enumerate(futures):
        try:
            f.get(timeout=DEADLINE_SECONDS)
        except Exception as e:
            fail("record %d not acknowledged: %r" % (i, e))
    producer.close(timeout=DEADLINE_SECONDS)

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", **security())
    deadline = time.monotonic() + DEADLINE_SECONDS
    partitions = None
    while not partitions:
        partitions = consumer.partitions_for_topic(topic)
        if time.monotonic() > deadline:
            fail("no metadata for topic %s" % topic)
    tps = [TopicPartition(topic, p) for p in sorted(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    seen = set()
    while len(seen) < count:
        if time.monotonic() > deadline:
            fail("read %d of %d records before the deadline" % (len(seen), count))
        for _, msgs in consumer.poll(timeout_ms=500).items():
            for m in msgs:
                key = m.key.decode()
                if key in seen:
                    fail("record %s read twice" % key)
                if m.value != ("sasl-%s" % key[2:]).encode():
                    fail("record %s: value %r" % (key, m.value))
                seen.add(key)
    consumer.close()
    print(json.dumps({"produced": count, "consumed": len(seen)}))


if __name__ == "__main__":
    main()

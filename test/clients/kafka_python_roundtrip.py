#!/usr/bin/python3
"""kafka-python round trip for kmirror's external-client tests.

Produces COUNT records to TOPIC with KafkaProducer (record i: key "k-<i>",
value "py-<i>", header h="v-<i>"), then reads them back with a KafkaConsumer
that has no group: it is assigned every partition and seeks to the beginning.
Checks that every record arrives exactly once with its content, and that
offsets rise within each partition. Prints a JSON summary on success; exits 1
with the reason otherwise.

Usage: /usr/bin/python3 kafka_python_roundtrip.py BOOTSTRAP TOPIC COUNT [none|gzip]
(Debian's python3-kafka; the other codecs need modules Debian does not pull in.)
"""

import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

DEADLINE_SECONDS = 60


def fail(msg):
    sys.stderr.write("kafka_python_roundtrip: %s\n" % msg)
    sys.exit(1)


def produce(bootstrap, topic, count, codec):
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
        retries=5,
    )
    futures = [
        producer.send(
            topic,
            key=("k-%d" % i).encode(),
            value=("py-%d" % i).encode(),
            headers=[("h", ("v-%d" % i).encode())],
        )
        for i in range(count)
    ]
    producer.flush(timeout=DEADLINE_SECONDS)
    for i, f in enumerate(futures):
        try:
            f.get(timeout=DEADLINE_SECONDS)
        except Exception as e:  # report which record, then stop
            fail("record %d not acknowledged: %r" % (i, e))
    producer.close(timeout=DEADLINE_SECONDS)


def consume(bootstrap, topic, count):
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    deadline = time.monotonic() + DEADLINE_SECONDS
    partitions = None
    while not partitions:
        partitions = consumer.partitions_for_topic(topic)
        if time.monotonic() > deadline:
            fail("no metadata for topic %s" % topic)
    tps = [TopicPartition(topic, p) for p in sorted(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)

    seen = {}
    last_offset = {}
    while len(seen) < count:
        if time.monotonic() > deadline:
            fail("read %d of %d records before the deadline" % (len(seen), count))
        for tp, msgs in consumer.poll(timeout_ms=500).items():
            for m in msgs:
                if m.offset <= last_offset.get(tp.partition, -1):
                    fail("partition %d: offset %d after %d" % (tp.partition, m.offset, last_offset[tp.partition]))
                last_offset[tp.partition] = m.offset
                key = m.key.decode()
                if key in seen:
                    fail("record %s read twice" % key)
                i = int(key[2:])
                want_headers = [("h", ("v-%d" % i).encode())]
                if m.value != ("py-%d" % i).encode() or list(m.headers) != want_headers:
                    fail("record %s: value %r headers %r" % (key, m.value, m.headers))
                seen[key] = tp.partition
    consumer.close()
    per_partition = {}
    for p in seen.values():
        per_partition[str(p)] = per_partition.get(str(p), 0) + 1
    return per_partition


def main():
    if len(sys.argv) not in (4, 5):
        fail("usage: kafka_python_roundtrip.py BOOTSTRAP TOPIC COUNT [none|gzip]")
    bootstrap = sys.argv[1].split(",")
    topic = sys.argv[2]
    count = int(sys.argv[3])
    codec = sys.argv[4] if len(sys.argv) == 5 else "none"
    if codec not in ("none", "gzip"):
        fail("unsupported compression %s" % codec)
    produce(bootstrap, topic, count, codec)
    per_partition = consume(bootstrap, topic, count)
    print(json.dumps({"produced": count, "consumed": sum(per_partition.values()), "partitions": per_partition}))


if __name__ == "__main__":
    main()

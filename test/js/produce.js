// Produces COUNT records to TOPIC with kafkajs, for kmirror's external-client
// tests. Record i has key "k-<i>", value "kafkajs-<i>" and header h="v-<i>".
// Usage: node produce.js BOOTSTRAP TOPIC COUNT [none|gzip]
// Prints {"produced": COUNT} on success; exits 1 with the error otherwise.
'use strict';

const { Kafka, logLevel, Partitioners, CompressionTypes } = require('kafkajs');

async function main() {
  const [bootstrap, topic, countArg, codecArg = 'none'] = process.argv.slice(2);
  const count = Number(countArg);
  if (!bootstrap || !topic || !Number.isInteger(count) || count < 0) {
    throw new Error('usage: node produce.js BOOTSTRAP TOPIC COUNT [none|gzip]');
  }
  // kafkajs ships only gzip; the other codecs need plugins.
  const codecs = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP };
  if (!(codecArg in codecs)) {
    throw new Error(`unsupported compression ${codecArg}: want none or gzip`);
  }

  const kafka = new Kafka({
    clientId: 'kmirror-test',
    brokers: bootstrap.split(','),
    logLevel: logLevel.ERROR,
    retry: { retries: 5 },
  });
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  try {
    const batch = 100;
    for (let start = 0; start < count; start += batch) {
      const messages = [];
      for (let i = start; i < Math.min(count, start + batch); i++) {
        messages.push({ key: `k-${i}`, value: `kafkajs-${i}`, headers: { h: `v-${i}` } });
      }
      await producer.send({ topic, messages, acks: -1, compression: codecs[codecArg] });
    }
  } finally {
    await producer.disconnect();
  }
  process.stdout.write(JSON.stringify({ produced: count }) + '\n');
}

main().catch((err) => {
  process.stderr.write(`produce.js: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});

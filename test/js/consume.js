// Consumes COUNT records of TOPIC from the beginning with a kafkajs consumer
// group (kafkajs has no group-less consumer), for kmirror's external-client
// tests. Prints each record as one JSON line {partition, offset, key, value,
// headers}; exits 1 if COUNT records do not arrive within TIMEOUT_MS.
// Usage: node consume.js BOOTSTRAP TOPIC COUNT GROUP [TIMEOUT_MS]
'use strict';

const { Kafka, logLevel } = require('kafkajs');

async function main() {
  const [bootstrap, topic, countArg, group, timeoutArg = '60000'] = process.argv.slice(2);
  const count = Number(countArg);
  const timeoutMs = Number(timeoutArg);
  if (!bootstrap || !topic || !group || !Number.isInteger(count) || count < 0 || !(timeoutMs > 0)) {
    throw new Error('usage: node consume.js BOOTSTRAP TOPIC COUNT GROUP [TIMEOUT_MS]');
  }
  const kafka = new Kafka({
    clientId: 'kmirror-test',
    brokers: bootstrap.split(','),
    logLevel: logLevel.ERROR,
  });
  const consumer = kafka.consumer({ groupId: group });
  await consumer.connect();
  const lines = [];
  try {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`received ${lines.length} of ${count} records within ${timeoutMs} ms`)),
        timeoutMs,
      );
      if (count === 0) {
        clearTimeout(timer);
        resolve();
        return;
      }
      consumer.on(consumer.events.CRASH, (e) => {
        clearTimeout(timer);
        reject(e.payload.error);
      });
      consumer
        .subscribe({ topic, fromBeginning: true })
        .then(() =>
          consumer.run({
            eachMessage: async ({ partition, message }) => {
              if (lines.length >= count) return;
              const headers = {};
              for (const [k, v] of Object.entries(message.headers || {})) {
                headers[k] = v === null || v === undefined ? null : v.toString();
              }
              lines.push(JSON.stringify({
                partition,
                offset: Number(message.offset),
                key: message.key === null ? null : message.key.toString(),
                value: message.value === null ? null : message.value.toString(),
                headers,
              }));
              if (lines.length === count) {
                clearTimeout(timer);
                resolve();
              }
            },
          }),
        )
        .catch((err) => {
          clearTimeout(timer);
          reject(err);
        });
    });
  } finally {
    await consumer.disconnect();
  }
  process.stdout.write(lines.join('\n') + (lines.length ? '\n' : ''));
}

main().catch((err) => {
  process.stderr.write(`consume.js: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});

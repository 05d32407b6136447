package io.kmirror.test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * ClientsCheck runs Apache Kafka's Java producer, consumer and Admin against
 * a cluster, for test/javaclients, which reads what it prints and decides.
 *
 * <p>Three clients run at once, each on its own thread:
 * <ul>
 * <li>the producer: acks=all, enable.idempotence=true, writes keys k000000,
 *     k000001, ... to the input topic until told to stop;</li>
 * <li>the transformer: a read_committed consumer of the input topic and a
 *     transactional producer (consume-transform-produce): each poll's
 *     records go to the output topic in one transaction, with the consumer's
 *     offsets (sendOffsetsToTransaction); every fifth transaction is
 *     aborted on purpose and its input processed again;</li>
 * <li>the reader: a read_committed consumer of the output topic in a
 *     classic group with CooperativeStickyAssignor and static membership
 *     (group.instance.id).</li>
 * </ul>
 *
 * <p>Usage: {@code ClientsCheck <bootstrap> <input topic> <output topic>}.
 * Commands on stdin, one a line: {@code stop-producer}; {@code
 * restart-reader} (a new consumer of the same group.instance.id takes
 * over); {@code admin <group>
 * <offset>} (describe the cluster, the topics, their offsets and the
 * reader's group, then set the offsets of the empty group to offset,
 * offset+1, ... for the input partitions); {@code stop} or end of input.
 *
 * <p>Output, one record a line, fields separated by single spaces:
 * <pre>
 * ACKED key partition offset          the producer's acknowledged records
 * FAILED key error                    records the producer gave up on
 * PRODUCED count                      the producer stopped after count sends
 * COMMITTED_TXN count / ABORTED_TXN count / TXN_ERROR error
 * CONSUMED key partition offset value the reader's records
 * POSITION topic partition offset     the reader's position, when it moves
 * ASSIGNED consumer topic-partition,... generation member-id
 * REVOKED consumer topic-partition,...  the reader's rebalances (its
 *                                     consumers count from 1)
 * CLUSTER id controller id@host:port,...
 * TOPIC name id partitions
 * PARTITION topic partition leader replicas isr   (ids joined by commas)
 * OFFSETS topic partition earliest latest latest-read_committed
 * GROUP id type state assignor / MEMBER instance-id topic-partition,...
 * GROUP_OFFSET group topic partition offset
 * ALTER_ACTIVE result                 altering the reader's live group
 * ADMIN_DONE / DONE / ERROR role error (then exit status 1)
 * </pre>
 */
public final class ClientsCheck {
    /** RATE is the producer's records a second. */
    private static final int RATE = 2000;

    private final String bootstrap;
    private final String input;
    private final String output;
    private final String readerGroup;
    private volatile boolean stopProducer;
    private volatile int readerRestarts;
    private volatile boolean stop;

    private ClientsCheck(String bootstrap, String input, String output) {
        this.bootstrap = bootstrap;
        this.input = input;
        this.output = output;
        this.readerGroup = output + "-reader";
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: ClientsCheck <bootstrap> <input topic> <output topic>");
            System.exit(2);
        }
        new ClientsCheck(args[0], args[1], args[2]).run();
    }

    /** print writes one line and flushes it: the test reads it as it comes. */
    static synchronized void print(String format, Object... args) {
        System.out.println(String.format(format, args));
        System.out.flush();
    }

    /** oneLine is an exception's class and message on one line. */
    static String oneLine(Throwable e) {
        return (e.getClass().getSimpleName() + ": " + e.getMessage()).replaceAll("\\s+", "_");
    }

    private void run() throws Exception {
        List<Thread> threads = List.of(
            role("producer", this::produce),
            role("transformer", this::transform),
            role("reader", this::read));
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = stdin.readLine()) != null; ) {
            String[] cmd = line.trim().split("\\s+");
            if (cmd[0].equals("stop-producer")) {
                stopProducer = true;
            } else if (cmd[0].equals("restart-reader")) {
                readerRestarts++;
            } else if (cmd[0].equals("admin") && cmd.length == 3) {
                admin(cmd[1], Long.parseLong(cmd[2]));
            } else if (cmd[0].equals("stop")) {
                break;
            } else if (!cmd[0].isEmpty()) {
                print("ERROR main unknown_command_%s", cmd[0]);
                System.exit(1);
            }
        }
        stopProducer = true;
        stop = true;
        for (Thread t : threads) {
            t.join();
        }
        print("DONE");
    }

    /** role runs body on a thread of its own; a failure ends the program. */
    private static Thread role(String name, ThrowingRunnable body) {
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                print("ERROR %s %s", name, oneLine(e));
                e.printStackTrace();
                System.exit(1);
            }
        }, name);
        t.start();
        return t;
    }

    @FunctionalInterface
    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    private Properties common() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        // A dead broker is noticed in seconds, not the default 30.
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        return p;
    }

    private Properties producerProps() {
        Properties p = common();
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return p;
    }

    private Properties consumerProps(String group) {
        Properties p = common();
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return p;
    }

    /**
     * produce sends numbered keys, at most 200 unacknowledged at a time and
     * at most RATE a second: enough to keep every client busy, not so many
     * that the test spends its time reading lines.
     */
    private void produce() throws Exception {
        Semaphore inFlight = new Semaphore(200);
        int sent = 0;
        long start = System.nanoTime();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps())) {
            while (!stopProducer) {
                long due = start + sent * (1_000_000_000L / RATE);
                long early = due - System.nanoTime();
                if (early > 0) {
                    TimeUnit.NANOSECONDS.sleep(early);
                }
                if (!inFlight.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                    continue;
                }
                String key = String.format("k%06d", sent++);
                producer.send(new ProducerRecord<>(input, key, "v" + key), (md, e) -> {
                    inFlight.release();
                    if (e == null) {
                        print("ACKED %s %d %d", key, md.partition(), md.offset());
                    } else {
                        print("FAILED %s %s", key, oneLine(e));
                    }
                });
            }
            producer.flush();
        }
        print("PRODUCED %d", sent);
    }

    private KafkaProducer<String, String> transactionalProducer() {
        Properties p = producerProps();
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, input + "-transformer");
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "20000");
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        while (true) {
            try {
                producer.initTransactions();
                return producer;
            } catch (TimeoutException e) {
                print("TXN_ERROR %s", oneLine(e));
            }
        }
    }

    /** transform copies the input to the output exactly once. */
    private void transform() throws Exception {
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps(input + "-transformer"));
        KafkaProducer<String, String> producer = transactionalProducer();
        consumer.subscribe(List.of(input));
        int txns = 0;
        while (!stop) {
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
            if (records.isEmpty()) {
                continue;
            }
            txns++;
            try {
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(output, r.key(), "t" + r.value()));
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                if (txns % 5 == 0) {
                    // Flushed first, so that the aborted records are in
                    // the log for read_committed readers to skip.
                    producer.flush();
                    producer.abortTransaction();
                    print("ABORTED_TXN %d", records.count());
                    rewind(consumer);
                    continue;
                }
                producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                commit(producer);
                print("COMMITTED_TXN %d", records.count());
            } catch (KafkaException e) {
                // What the broker failure left of the transaction is
                // aborted (by a new producer, whose initTransactions
                // fences and aborts, when this one cannot), and the input
                // since the last commit is processed again.
                print("TXN_ERROR %s", oneLine(e));
                try {
                    producer.abortTransaction();
                } catch (KafkaException abortErr) {
                    print("TXN_ERROR %s", oneLine(abortErr));
                    producer.close(Duration.ZERO);
                    producer = transactionalProducer();
                }
                rewind(consumer);
            }
        }
        producer.close();
        consumer.close();
    }

    /** commit commits the open transaction, retrying a timed-out commit. */
    private static void commit(KafkaProducer<String, String> producer) {
        while (true) {
            try {
                producer.commitTransaction();
                return;
            } catch (TimeoutException e) {
                print("TXN_ERROR %s", oneLine(e));
            }
        }
    }

    /** rewind moves the consumer back to its group's committed offsets. */
    private static void rewind(KafkaConsumer<String, String> consumer) {
        while (true) {
            try {
                Set<TopicPartition> assigned = consumer.assignment();
                Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned);
                for (TopicPartition tp : assigned) {
                    OffsetAndMetadata o = committed.get(tp);
                    if (o == null) {
                        consumer.seekToBeginning(List.of(tp));
                    } else {
                        consumer.seek(tp, o.offset());
                    }
                }
                return;
            } catch (TimeoutException e) {
                print("TXN_ERROR %s", oneLine(e));
            }
        }
    }

    /**
     * read prints every committed record of the output topic. On
     * restart-reader it commits, closes its consumer (a static member
     * does not leave its group) and reads on with a new one of the same
     * group.instance.id.
     */
    private void read() {
        Properties p = consumerProps(readerGroup);
        p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "reader-1");
        p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
        for (int instance = 1; !stop; instance++) {
            int restarts = readerRestarts;
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
                final int me = instance;
                consumer.subscribe(List.of(output), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                        print("ASSIGNED %d %s %d %s", me, join(parts),
                            consumer.groupMetadata().generationId(), consumer.groupMetadata().memberId());
                    }

                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                        print("REVOKED %d %s", me, join(parts));
                    }
                });
                Map<TopicPartition, Long> positions = new HashMap<>();
                while (!stop && readerRestarts == restarts) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<String, String> r : records) {
                        print("CONSUMED %s %d %d %s", r.key(), r.partition(), r.offset(), r.value());
                    }
                    if (!records.isEmpty()) {
                        try {
                            consumer.commitSync();
                        } catch (KafkaException e) {
                            print("COMMIT_ERROR %s", oneLine(e));
                        }
                    }
                    // The position passes transaction markers and aborted
                    // records too: the test waits for it to reach the end.
                    for (TopicPartition tp : consumer.assignment()) {
                        try {
                            long pos = consumer.position(tp, Duration.ofSeconds(1));
                            Long before = positions.put(tp, pos);
                            if (before == null || before != pos) {
                                print("POSITION %s %d %d", tp.topic(), tp.partition(), pos);
                            }
                        } catch (TimeoutException e) {
                            // Not known yet: the next round asks again.
                        }
                    }
                }
                // The next consumer starts where this one stopped.
                while (true) {
                    try {
                        consumer.commitSync();
                        break;
                    } catch (KafkaException e) {
                        print("COMMIT_ERROR %s", oneLine(e));
                    }
                }
            }
        }
    }

    private static String join(Collection<TopicPartition> parts) {
        if (parts.isEmpty()) {
            return "-";
        }
        return parts.stream().map(tp -> tp.topic() + "-" + tp.partition()).sorted().collect(Collectors.joining(","));
    }

    private static String ids(Collection<Node> nodes) {
        return nodes.stream().map(Node::id).sorted().map(String::valueOf).collect(Collectors.joining(","));
    }

    /** admin describes what the test checks, then alters group's offsets. */
    private void admin(String group, long offset) throws Exception {
        try (Admin admin = Admin.create(common())) {
            DescribeClusterResult cluster = admin.describeCluster();
            print("CLUSTER %s %d %s", cluster.clusterId().get(), cluster.controller().get().id(),
                cluster.nodes().get().stream().sorted((a, b) -> Integer.compare(a.id(), b.id()))
                    .map(n -> n.id() + "@" + n.host() + ":" + n.port()).collect(Collectors.joining(",")));

            Map<String, TopicDescription> topics = new TreeMap<>(admin.describeTopics(List.of(input, output)).allTopicNames().get());
            Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (TopicDescription td : topics.values()) {
                print("TOPIC %s %s %d", td.name(), td.topicId(), td.partitions().size());
                for (TopicPartitionInfo pi : td.partitions()) {
                    print("PARTITION %s %d %d %s %s", td.name(), pi.partition(),
                        pi.leader() == null ? -1 : pi.leader().id(), ids(pi.replicas()), ids(pi.isr()));
                    TopicPartition tp = new TopicPartition(td.name(), pi.partition());
                    earliest.put(tp, OffsetSpec.earliest());
                    latest.put(tp, OffsetSpec.latest());
                }
            }
            Map<TopicPartition, ListOffsetsResultInfo> first = admin.listOffsets(earliest).all().get();
            Map<TopicPartition, ListOffsetsResultInfo> last = admin.listOffsets(latest).all().get();
            Map<TopicPartition, ListOffsetsResultInfo> stable =
                admin.listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).all().get();
            for (TopicPartition tp : new TreeMap<>(toStrings(earliest.keySet())).values()) {
                print("OFFSETS %s %d %d %d %d", tp.topic(), tp.partition(),
                    first.get(tp).offset(), last.get(tp).offset(), stable.get(tp).offset());
            }

            ConsumerGroupDescription g = admin.describeConsumerGroups(List.of(readerGroup)).all().get().get(readerGroup);
            print("GROUP %s %s %s %s", g.groupId(), g.type(), g.groupState(), g.partitionAssignor());
            for (MemberDescription m : g.members()) {
                print("MEMBER %s %s", m.groupInstanceId().orElse("-"),
                    join(m.assignment().topicPartitions()));
            }
            printGroupOffsets(admin, readerGroup);

            Map<TopicPartition, OffsetAndMetadata> want = new HashMap<>();
            for (TopicPartitionInfo pi : topics.get(input).partitions()) {
                want.put(new TopicPartition(input, pi.partition()), new OffsetAndMetadata(offset + pi.partition(), "set by admin"));
            }
            admin.alterConsumerGroupOffsets(group, want).all().get();
            printGroupOffsets(admin, group);

            // A group with a live member refuses offsets from outside it.
            try {
                admin.alterConsumerGroupOffsets(readerGroup,
                    Map.of(new TopicPartition(output, 0), new OffsetAndMetadata(0))).all().get();
                print("ALTER_ACTIVE accepted");
            } catch (ExecutionException e) {
                print("ALTER_ACTIVE %s", e.getCause().getClass().getSimpleName());
            }
        }
        print("ADMIN_DONE");
    }

    private static Map<String, TopicPartition> toStrings(Collection<TopicPartition> tps) {
        Map<String, TopicPartition> m = new HashMap<>();
        for (TopicPartition tp : tps) {
            m.put(String.format("%s-%09d", tp.topic(), tp.partition()), tp);
        }
        return m;
    }

    private static void printGroupOffsets(Admin admin, String group) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets =
            admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        for (TopicPartition tp : new TreeMap<>(toStrings(offsets.keySet())).values()) {
            print("GROUP_OFFSET %s %s %d %d", group, tp.topic(), tp.partition(), offsets.get(tp).offset());
        }
    }
}

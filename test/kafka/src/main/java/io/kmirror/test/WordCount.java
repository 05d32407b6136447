package io.kmirror.test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;

/**
 * WordCount is Kafka Streams' word count with exactly_once_v2, for
 * test/javaclients: the input's lines are split into words, regrouped by
 * word (through the repartition topic {@code <application id>-words-repartition}),
 * counted into the state store "counts" (an in-memory store backed by the
 * changelog topic {@code <application id>-counts-changelog}, so that a new
 * instance restores it from the cluster), and every new count goes to the
 * output topic (the store's cache is off, so no update is folded into a
 * later one): the counts of a word in the output are 1, 2, 3, ... exactly
 * when nothing is counted twice or lost.
 *
 * <p>Usage: {@code WordCount <bootstrap> <application id> <input> <output>
 * <state dir>}. It runs until its standard input ends, then closes.
 * Output lines: {@code STATE <state>} on every state change, {@code ERROR
 * <thread> <error>} for an exception that killed a stream thread (which
 * is replaced), {@code DONE} once closed.
 */
public final class WordCount {
    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: WordCount <bootstrap> <application id> <input> <output> <state dir>");
            System.exit(2);
        }
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "3");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "2");
        p.put(StreamsConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        // Processed repartition records are deleted (DeleteRecords) every
        // second rather than every 30.
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, "1000");
        // The members of a killed instance leave the group in seconds.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), "6000");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), "1000");

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.split(" ")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("counts"))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setStateListener((now, before) -> print("STATE " + now));
        streams.setUncaughtExceptionHandler(e -> {
            print("ERROR " + Thread.currentThread().getName() + " "
                + (e.getClass().getSimpleName() + ": " + e.getMessage()).replaceAll("\\s+", "_"));
            e.printStackTrace();
            return StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        streams.start();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (stdin.readLine() != null) {
            // Only the end of the input matters.
        }
        streams.close(Duration.ofSeconds(60));
        print("DONE");
    }

    private static synchronized void print(String line) {
        System.out.println(line);
        System.out.flush();
    }
}

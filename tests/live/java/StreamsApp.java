import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams 4.4 application on the streams rebalance protocol (KIP-1071, group.protocol=streams)
 * for kgroup's live tests: its group is a streams group with two subtopologies, a repartition topic and
 * a changelogged state store, so the coordinator assigns active and standby tasks.
 * Topology: input (String key/value) -> selectKey(value) -> repartition "by-value" -> count into the
 * store "counts" -> output (key, count as a string).
 * Arguments: bootstrap, application.id, input topic, output topic, group.instance.id ("-" for a
 * dynamic member; Kafka Streams suffixes it per thread: ID-1 for its one thread), state directory,
 * then optional key=value Streams settings.
 * It prints "READY" the first time the application is RUNNING, "state S" on every state change,
 * "counted N" after every N-th counted record, and "closed" once closed. It closes on a line
 * "close" (the default close: a static member stays in the group until its session expires),
 * "leave" (a close that leaves the group, static or not), the end of its stdin, or SIGTERM (exit code 0).
 */
public class StreamsApp {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, 1);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        if (!args[4].equals("-")) {
            props.put(StreamsConfig.consumerPrefix("group.instance.id"), args[4]);
        }
        props.put(StreamsConfig.CLIENT_ID_CONFIG, "streams-" + (args[4].equals("-") ? "dynamic" : args[4]));
        for (int i = 6; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }

        long[] counted = {0};
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((key, value) -> value)
            .groupByKey(Grouped.as("by-value"))
            .count(Materialized.as("counts"))
            .toStream()
            .peek((key, count) -> {
                synchronized (counted) {
                    counted[0]++;
                    System.out.println("counted " + counted[0]);
                }
            })
            .mapValues(count -> Long.toString(count))
            .to(args[3], Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        AtomicBoolean ready = new AtomicBoolean(false);
        streams.setStateListener((now, before) -> {
            System.out.println("state " + now);
            if (now == KafkaStreams.State.RUNNING && ready.compareAndSet(false, true)) {
                System.out.println("READY");
            }
        });
        streams.setUncaughtExceptionHandler(exception -> {
            System.out.println("error " + exception);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });

        CountDownLatch closed = new CountDownLatch(1);
        AtomicBoolean closing = new AtomicBoolean(false);
        Runnable close = () -> {
            if (closing.compareAndSet(false, true)) {
                streams.close(CloseOptions.timeout(Duration.ofSeconds(30)));
                System.out.println("closed");
                closed.countDown();
            }
        };
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            close.run();
            try {
                closed.await();
            } catch (InterruptedException ignored) {
            }
            System.out.flush();
            Runtime.getRuntime().halt(0);       // closed cleanly: exit 0, not SIGTERM's 143
        }));
        streams.start();

        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.equals("leave")) {
                    if (closing.compareAndSet(false, true)) {
                        streams.close(CloseOptions.groupMembershipOperation(
                            CloseOptions.GroupMembershipOperation.LEAVE_GROUP).withTimeout(Duration.ofSeconds(30)));
                        System.out.println("closed");
                        closed.countDown();
                    }
                    break;
                }
                if (line.equals("close")) {
                    break;
                }
            }
        }
        close.run();
        closed.await();
        System.out.flush();
        System.exit(0);
    }
}

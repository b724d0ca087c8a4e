import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A Kafka Java consumer (4.4) as a group member for kgroup's live tests, classic or consumer protocol.
 * Arguments: bootstrap, group id, group.instance.id ("-" for a dynamic member), group.protocol
 * (classic or consumer), comma-separated topics (or a regex beginning with "^"), then optional
 * key=value client settings.
 * It prints "assigned t-p,t-p,..." whenever its assignment changes and "error NAME message" for an
 * exception of poll; it commits synchronously after every poll that returned records. It runs until
 * a line "close" (a graceful close) or the end of its stdin, or until it is killed.
 * Its rebalance listener prints "callback revoked|assigned|lost t-p,..." as the client calls it.
 * Other stdin lines (the differential runner's): "commit N" commits offset N of every owned
 * partition ("commit ok t-p,..." or "commit error NAME"), "subscribe t,u" changes the
 * subscription ("subscribe ok").
 */
public class GroupMember {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[1]);
        if (!args[2].equals("-")) {
            props.put("group.instance.id", args[2]);
        }
        props.put("group.protocol", args[3]);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("client.id", "java-" + args[2]);
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        for (int i = 5; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        AtomicBoolean closing = new AtomicBoolean(false);
        ConcurrentLinkedQueue<String> commands = new ConcurrentLinkedQueue<>();
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = in.readLine()) != null && !line.equals("close")) {
                    commands.add(line);
                }
            } catch (Exception ignored) {
            }
            closing.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    callback("revoked", partitions);
                }
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    callback("assigned", partitions);
                }
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    callback("lost", partitions);
                }
            };
            if (args[4].startsWith("^")) {
                // subscribe(Pattern) joins with the topics the consumer's metadata matches at that
                // moment: wait for its first Metadata answer (the second response, after ApiVersions)
                // so the join does not race it and carry no topics on one side and some on the other
                long deadline = System.currentTimeMillis() + 5000;
                while (responses(consumer) < 2 && System.currentTimeMillis() < deadline) {
                    Thread.sleep(20);
                }
                consumer.subscribe(java.util.regex.Pattern.compile(args[4]), listener);
            } else {
                consumer.subscribe(List.of(args[4].split(",")), listener);
            }
            String last = null;
            while (!closing.get()) {
                String command;
                while ((command = commands.poll()) != null) {
                    if (command.startsWith("commit ")) {
                        long offset = Long.parseLong(command.substring(7).trim());
                        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                        for (TopicPartition tp : consumer.assignment()) {
                            offsets.put(tp, new OffsetAndMetadata(offset));
                        }
                        try {
                            consumer.commitSync(offsets);
                            System.out.println("commit ok " + names(offsets.keySet()));
                        } catch (Exception e) {
                            System.out.println("commit error " + e.getClass().getSimpleName());
                        }
                    } else if (command.startsWith("subscribe ")) {
                        consumer.subscribe(List.of(command.substring(10).trim().split(",")), listener);
                        System.out.println("subscribe ok");
                    }
                    System.out.flush();
                }
                try {
                    int count = consumer.poll(Duration.ofMillis(100)).count();
                    if (count > 0) {
                        consumer.commitSync();
                    }
                } catch (Exception e) {
                    System.out.println("error " + e.getClass().getSimpleName() + " " + e.getMessage());
                    System.out.flush();
                    if (e instanceof org.apache.kafka.common.errors.FencedInstanceIdException
                            || e instanceof org.apache.kafka.common.errors.UnreleasedInstanceIdException) {
                        break;
                    }
                }
                TreeSet<String> owned = new TreeSet<>();
                for (TopicPartition tp : consumer.assignment()) {
                    owned.add(tp.topic() + "-" + tp.partition());
                }
                String now = String.join(",", owned);
                if (!now.equals(last)) {
                    last = now;
                    System.out.println("assigned " + now);
                    System.out.flush();
                }
            }
        }
        System.out.println("closed");
    }

    /** The responses the consumer's network client has received (its consumer-metrics response-total). */
    static double responses(KafkaConsumer<byte[], byte[]> consumer) {
        for (Map.Entry<org.apache.kafka.common.MetricName, ? extends org.apache.kafka.common.Metric> e
                : consumer.metrics().entrySet()) {
            if (e.getKey().name().equals("response-total") && e.getKey().group().equals("consumer-metrics")) {
                return ((Number) e.getValue().metricValue()).doubleValue();
            }
        }
        return 0;
    }

    static String names(Collection<TopicPartition> partitions) {
        TreeSet<String> names = new TreeSet<>();
        for (TopicPartition tp : partitions) {
            names.add(tp.topic() + "-" + tp.partition());
        }
        return String.join(",", names);
    }

    static void callback(String kind, Collection<TopicPartition> partitions) {
        System.out.println("callback " + kind + " " + names(partitions));
        System.out.flush();
    }
}

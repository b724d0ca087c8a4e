import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A Kafka Java consumer (4.4) as a group member for kgroup's live tests, classic or consumer protocol.
 * Arguments: bootstrap, group id, group.instance.id ("-" for a dynamic member), group.protocol
 * (classic or consumer), comma-separated topics, then optional key=value client settings.
 * It prints "assigned t-p,t-p,..." whenever its assignment changes and "error NAME message" for an
 * exception of poll; it commits synchronously after every poll that returned records. It runs until
 * a line "close" (a graceful close) or the end of its stdin, or until it is killed.
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
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = in.readLine()) != null && !line.equals("close")) {
                }
            } catch (Exception ignored) {
            }
            closing.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(args[4].split(",")), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {}
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}
            });
            String last = null;
            while (!closing.get()) {
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
}

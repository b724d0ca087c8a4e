import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A Kafka Java consumer with group.protocol=consumer (KIP-848) for kgroup's serve tests.
 * Arguments: bootstrap, group id, group.instance.id, topic, records to consume, timeout in seconds,
 * and optionally a properties file of client settings (security.protocol, sasl.*, ssl.*).
 * It prints "assigned p,p,..." whenever its assignment changes, then "consumed N" and "committed"
 * once it has read N records and committed synchronously, then closes.
 */
public class StaticConsumer {
    public static void main(String[] args) throws java.io.IOException {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[1]);
        props.put("group.instance.id", args[2]);
        props.put("group.protocol", "consumer");
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        if (args.length > 6) {
            try (java.io.FileReader settings = new java.io.FileReader(args[6])) {
                props.load(settings);
            }
        }
        int wanted = Integer.parseInt(args[4]);
        long deadline = System.currentTimeMillis() + 1000L * Long.parseLong(args[5]);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(args[3]));
            int consumed = 0;
            String last = null;
            while (consumed < wanted && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                consumed += records.count();
                TreeSet<Integer> owned = new TreeSet<>();
                for (TopicPartition tp : consumer.assignment()) {
                    owned.add(tp.partition());
                }
                String now = owned.toString().replace(" ", "").replace("[", "").replace("]", "");
                if (!now.equals(last)) {
                    last = now;
                    System.out.println("assigned " + now);
                }
            }
            System.out.println("consumed " + consumed);
            consumer.commitSync();
            System.out.println("committed");
        }
    }
}

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Kafka's KafkaShareConsumer 4.4 as a member of a share group (KIP-932) for kgroup's live tests.
 * Arguments: bootstrap, share group id, comma-separated topics, client id, then optional key=value
 * client settings. It acknowledges every record explicitly (ACCEPT; share.acknowledgement.mode=explicit)
 * and commits the acknowledgements after each poll.
 * It prints "READY" once a ShareGroupHeartbeat has been answered (the member has joined), "acked N"
 * whenever the total of acknowledged records grows, "error NAME message" for an exception of poll, and
 * "closed" once closed. It closes (leaving the group) on a line "close", the end of its stdin, or SIGTERM (exit code 0).
 */
public class ShareMember {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[1]);
        props.put("client.id", args[3]);
        props.put("share.acknowledgement.mode", "explicit");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        for (int i = 4; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        AtomicBoolean closing = new AtomicBoolean(false);
        CountDownLatch closed = new CountDownLatch(1);
        KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            closing.set(true);
            consumer.wakeup();
            try {
                closed.await();
            } catch (InterruptedException ignored) {
            }
            System.out.flush();
            Runtime.getRuntime().halt(0);       // closed cleanly: exit 0, not SIGTERM's 143
        }));
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = in.readLine()) != null && !line.equals("close")) {
                }
            } catch (Exception ignored) {
            }
            closing.set(true);
            consumer.wakeup();
        });
        stdin.setDaemon(true);
        stdin.start();

        long acked = 0;
        boolean ready = false;
        try {
            consumer.subscribe(List.of(args[2].split(",")));
            while (!closing.get()) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(100));
                } catch (WakeupException e) {
                    break;
                } catch (Exception e) {
                    System.out.println("error " + e.getClass().getSimpleName() + " " + e.getMessage());
                    continue;
                }
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                }
                if (!records.isEmpty()) {
                    consumer.commitSync(Duration.ofSeconds(10));
                    acked += records.count();
                    System.out.println("acked " + acked);
                }
                if (!ready && heartbeatsAnswered(consumer.metrics()) > 0) {
                    ready = true;
                    System.out.println("READY");
                }
            }
        } finally {
            consumer.close(Duration.ofSeconds(30));
            System.out.println("closed");
            System.out.flush();
            closed.countDown();
        }
        System.exit(0);
    }

    /** The consumer's count of answered ShareGroupHeartbeats (its heartbeat-total metric). */
    private static double heartbeatsAnswered(Map<MetricName, ? extends Metric> metrics) {
        for (Map.Entry<MetricName, ? extends Metric> metric : metrics.entrySet()) {
            if (metric.getKey().name().equals("heartbeat-total")
                    && metric.getKey().group().endsWith("-coordinator-metrics")) {
                return ((Number) metric.getValue().metricValue()).doubleValue();
            }
        }
        return 0;
    }
}

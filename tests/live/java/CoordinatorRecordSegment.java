import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

import java.io.File;
import java.io.FileOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes a segment file of coordinator records serialized by Kafka's own code: each record of the
 * spec (a JSON list of {"type", "key", "version", "value"}, value null for a tombstone) is read with
 * the family's generated CoordinatorRecordJsonConverters and serialized with its record serde
 * (GroupCoordinatorRecordSerde for __consumer_offsets, ShareCoordinatorRecordSerde for
 * __share_group_state), all in one uncompressed batch at offset 0.
 *
 * Usage: CoordinatorRecordSegment offsets|share-state SPEC.json OUT.log
 */
public class CoordinatorRecordSegment {
    public static void main(String[] args) throws Exception {
        boolean share = args[0].equals("share-state");
        CoordinatorRecordSerde serde = share ? new ShareCoordinatorRecordSerde() : new GroupCoordinatorRecordSerde();
        JsonNode spec = new ObjectMapper().readTree(new File(args[1]));
        List<SimpleRecord> records = new ArrayList<>();
        long timestamp = spec.get("timestamp").asLong();
        for (JsonNode entry : spec.get("records")) {
            short type = (short) entry.get("type").asInt();
            ApiMessage key = share
                ? org.apache.kafka.coordinator.share.generated.CoordinatorRecordJsonConverters.readRecordKeyFromJson(entry.get("key"), type)
                : org.apache.kafka.coordinator.group.generated.CoordinatorRecordJsonConverters.readRecordKeyFromJson(entry.get("key"), type);
            CoordinatorRecord record;
            if (entry.get("value").isNull()) {
                record = CoordinatorRecord.tombstone(key);
            } else {
                short version = (short) entry.get("version").asInt();
                ApiMessage value = share
                    ? org.apache.kafka.coordinator.share.generated.CoordinatorRecordJsonConverters.readRecordValueFromJson(entry.get("value"), type, version)
                    : org.apache.kafka.coordinator.group.generated.CoordinatorRecordJsonConverters.readRecordValueFromJson(entry.get("value"), type, version);
                record = CoordinatorRecord.record(key, new ApiMessageAndVersion(value, version));
            }
            records.add(new SimpleRecord(timestamp++, serde.serializeKey(record), serde.serializeValue(record)));
        }
        MemoryRecords batch = MemoryRecords.withRecords(Compression.NONE, records.toArray(new SimpleRecord[0]));
        ByteBuffer buffer = batch.buffer();
        try (FileOutputStream out = new FileOutputStream(args[2])) {
            out.getChannel().write(buffer);
        }
    }
}

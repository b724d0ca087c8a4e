"""Text identical to `kafka-dump-log.sh --offsets-decoder` (trunk), so existing runbooks and diffs keep working."""

from __future__ import annotations

from kgroup.records import dump_log_key, dump_log_payload


def _bool(flag: bool) -> str:
    return "true" if flag else "false"


def header_lines(path_as_given: str, base_offset: int) -> list[str]:
    return [f"Dumping {path_as_given}", f"Log starting offset: {base_offset}"]


def batch_line(batch) -> str:
    tail = (f"position: {batch.position} {batch.timestamp_type}: {batch.max_timestamp} size: {batch.size} "
            f"magic: {batch.magic} compresscodec: {batch.compression} crc: {batch.crc} "
            f"isvalid: {_bool(batch.crc_valid)}")
    if batch.magic < 2:
        return f"offset: {batch.last_offset} {tail}"
    if batch.base_sequence < 0:
        last_sequence = -1
    else:
        last_sequence = (batch.base_sequence + batch.last_offset - batch.base_offset) % (1 << 31)
    horizon = ("OptionalLong.empty" if batch.delete_horizon_ms is None
               else f"OptionalLong[{batch.delete_horizon_ms}]")
    return (f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.records_count} "
            f"baseSequence: {batch.base_sequence} lastSequence: {last_sequence} "
            f"producerId: {batch.producer_id} producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {_bool(batch.is_transactional)} isControl: {_bool(batch.is_control)} "
            f"deleteHorizonMs: {horizon} {tail}")


def record_line(batch, record, row) -> str:
    """One `| offset: ...` line; `row` is the DecodedRow for the record (None for a dropped control record)."""
    head = (f"| offset: {record.offset} {batch.timestamp_type}: {record.timestamp} "
            f"keySize: {record.key_size} valueSize: {record.value_size}")
    if batch.magic >= 2:
        head += f" sequence: {record.sequence} headerKeys: [{','.join(k for k, _ in record.headers)}]"
    else:
        head += f" isValid: {_bool(bool(record.is_valid))} crc: {record.crc}}}"
    if batch.is_control:
        if record.control in ("COMMIT", "ABORT"):
            return f"{head} endTxnMarker: {record.control} coordinatorEpoch: {record.coordinator_epoch}"
        return f"{head} controlType: {record.control}"
    if row is None:
        return head
    if row.kind == "error":
        if row.record_type is not None:
            return f"{head} key: {row.error}"
        return f"{head} key: Error at offset {record.offset}, skipping. {row.error}"
    payload = "<DELETE>" if row.value is None else dump_log_payload(row.record_type, row.value, row.key.family)
    return f"{head} key: {dump_log_key(row.key)} payload: {payload}"


def batch_lines(batch, rows, key_texts: dict | None = None) -> list[str]:
    """The batch line and its record lines; rows are the decoder's rows for this batch, in order.

    key_texts caches dump_log_key by key bytes (keys repeat; give one dict per input, as the family
    is one per input)."""
    lines = [batch_line(batch)]
    records = batch.records
    if batch.is_control or batch.magic < 2 or len(rows) != len(records):  # every shape, one by one
        by_offset = {row.offset: row for row in rows}
        lines += [record_line(batch, record, by_offset.get(record.offset)) for record in records]
        return lines
    # One row per record, in order: a data record's line is one format filled in
    data_line = (f"| offset: %d {batch.timestamp_type}: %d keySize: %d valueSize: %d sequence: %d "
                 "headerKeys: [%s] key: %s payload: %s")
    if key_texts is None:
        key_texts = {}
    elif len(key_texts) > KEY_TEXT_LIMIT:
        key_texts.clear()
    append = lines.append
    for record, row in zip(records, rows):
        if row.kind != "data":
            append(record_line(batch, record, row))
            continue
        key_text = key_texts.get(row.key_bytes)
        if key_text is None:
            key_text = key_texts[row.key_bytes] = dump_log_key(row.key)
        value = row.value
        headers = record.headers
        append(data_line % (record.offset, record.timestamp, record.key_size, record.value_size, record.sequence,
                            ",".join(k for k, _ in headers) if headers else "", key_text,
                            "<DELETE>" if value is None else dump_log_payload(row.record_type, value,
                                                                              row.key.family)))
    return lines


KEY_TEXT_LIMIT = 200_000


def trailing_bytes_line(file_name: str, count: int) -> str:
    return f"Found {count} invalid bytes at the end of {file_name}"

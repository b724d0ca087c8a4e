"""A topic id as the 16 bytes of Kafka's ``Uuid``, whatever form the caller keeps it in.

The coordinator keeps topic ids as 16 bytes, base64 text (``Uuid.toString()``) or ``uuid.UUID``;
tests name topics with plain text. Both orders Kafka's assignors walk topics in — ``Uuid.compareTo``
(``server_order``) and ``Uuid.hashCode`` (``java_order``) — read the id's bytes here.
"""

from __future__ import annotations

import base64
import uuid


def uuid_bytes(topic_id: object) -> bytes | None:
    """The id's 16 bytes, or None when it is not a Uuid in any of the forms above."""
    if isinstance(topic_id, uuid.UUID):
        return topic_id.bytes
    if isinstance(topic_id, (bytes, bytearray)) and len(topic_id) == 16:
        return bytes(topic_id)
    if isinstance(topic_id, str) and len(topic_id) == 22:       # Uuid.toString(): url-safe base64, no padding
        try:
            raw = base64.urlsafe_b64decode(topic_id + "==")
        except ValueError:
            return None
        return raw if len(raw) == 16 else None
    return None

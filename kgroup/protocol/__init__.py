"""Kafka wire messages kafka-python 3.0 does not ship, declared as data the way it declares its own.

kafka-python builds each message class from Kafka's JSON message schema (its ``JsonSchemaData``
metaclass reads ``<ClassName>.json`` through ``load_json``). The classes here point that loader at
``kgroup/protocol/schemas`` instead, so they encode and decode exactly like kafka-python's classes
(``Request[v].encode()``, ``Response.decode(data, version=v)``) and serve can treat them alike.
"""

from kafka.protocol.api_message import ApiMessage

from kgroup.protocol import schemas

__all__ = [
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
]


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=schemas):
    pass


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=schemas):
    pass


class ConsumerGroupDescribeRequest(ApiMessage, load_json=schemas):
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=schemas):
    pass

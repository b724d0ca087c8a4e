"""kgroup: operations toolkit for Kafka consumer groups with static membership."""

__version__ = "0.1.0"

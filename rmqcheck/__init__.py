"""rmqcheck: model checking and property testing of Apache RocketMQ replication and failover."""

__version__ = "0.1.0"

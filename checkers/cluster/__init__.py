"""Real runs: RocketMQ's own broker-side code as a cluster on this machine, driven step by step
and under faults (docs/cluster.md). node.py: one broker's JVM; proxy.py: an HA link; controller.py:
the controller's classes; harness.py: the cluster and the one loop that decides what happens."""

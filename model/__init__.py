"""The pure-functional model of RocketMQ controller-mode replication (no I/O, no clocks,
no randomness); `step.step` is the one transition function."""

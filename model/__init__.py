"""The pure-functional model of RocketMQ controller-mode replication: no clocks, no randomness,
no I/O in any rule (`configs.load` reads the configuration file a user names, before any rule
runs); `step.step` is the one transition function."""

"""Conformance: RocketMQ's own classes, compiled from a source tree, driven beside the model.

build.py compiles the controller's ReplicasInfoManager, DefaultElectPolicy and heartbeat
manager and the store's EpochFileCache (with our driver, java/driver/, and stubs, java/stubs/);
driver.py runs that JVM; model_side.py answers the same requests from the model's rule
functions; conform.py generates request sequences, compares the answers field by field, shrinks
a divergence and reads and writes it as a scenario file. See docs/conformance.md.
"""

"""Checkers over the model, in five parts (each a subpackage), lowest first:

* `counterexamples`: what every checker hands over: counterexample files (JSON) and scenario
  text, deterministic replay with the invariants after every step, delta debugging, start
  states built from replicas' logs, readable state summaries.
* `search`: the search methods: Hypothesis stateful testing, random and guided walks,
  breadth-first exploration with coverage witnesses, lassos for liveness, the other modes behind
  one interface, and hunting (search, shrink, explain, write).
* `proofs`: Z3 proofs of the truncation search and of the DLedger offset mapping.
* `java`: conformance: RocketMQ's own classes compiled from a source tree and driven beside the
  model, request by request and in lockstep with whole runs.
* `tables`: results over many runs: the guarantee matrix and the bug-rediscovery benchmark.

A part imports only the parts above it in this list, the invariants and the model.
"""

"""Counterexamples: files and scenario text (`files`), replay and delta debugging (`replay`),
start states built from replicas' logs (`startstate`), readable summaries (`describe`)."""

"""The invariant catalogue: pure predicates over model states and steps."""

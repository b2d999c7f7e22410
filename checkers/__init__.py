"""Checkers over the model: Hypothesis stateful hunting, replay, counterexample files."""

"""Search methods over the model: `stateful` (Hypothesis), `walk` (random and guided walks),
`explore` (breadth-first, with `coverage` witnesses), `liveness` (fair cycles), `modes` (classic
HA, DLedger and recovery behind one interface) and `hunting` (search, shrink, explain, write)."""

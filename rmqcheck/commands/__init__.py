"""One module per command, in the order `rmqcheck --help` lists them. Shared helpers live in
`common` (and what `cluster` and `replay` share about a recorded run, in `cluster_runs`; the
soak of `cluster --soak`, in `cluster_soak`); no command imports another command's module."""

from . import (bugs, check, cluster, conform, explore, findings, hunt, invariants, matrix, prove, replay, report, scenario,
               simulate, validate)

COMMANDS = (check, hunt, explore, conform, cluster, matrix, report, replay, prove, bugs, findings, invariants, simulate, validate,
            scenario)

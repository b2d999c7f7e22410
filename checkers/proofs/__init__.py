"""Z3 proofs on the code the model runs: the slave's truncation search (`truncation`) and the
DLedgerCommitLog offset mapping (`dledger_offsets`)."""

"""Results over many runs: the guarantee matrix (`matrix`) and the bug-rediscovery benchmark
(`rediscovery`), spread over processes by `parallel`."""

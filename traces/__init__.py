"""Recorded runs: the v1 event schema (`schema`), NDJSON and Parquet files (`files`), the model's
recorder (`recorder`), conformance replay of traces through the model (`conformance`),
client-history checks (`history`), OpenChaos and `epochFileCheckpoint` adapters (`openchaos`,
`stores`), and two validation engines with one meaning: local (`validate`) and PySpark (`spark`)."""

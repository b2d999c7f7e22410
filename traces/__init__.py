"""Validation of recorded runs (NDJSON / Parquet, local and PySpark engines): not built yet."""

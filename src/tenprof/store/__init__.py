"""The profile store: a versioned directory of Parquet tables plus `meta.json`, queried with DuckDB."""

"""Storage: the ClickHouse/chDB tables (sql/schema.sql), row encoding and retried access."""

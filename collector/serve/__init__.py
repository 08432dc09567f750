"""HTTP surfaces: Prometheus metrics and health, and the OTLP/HTTP receiver."""

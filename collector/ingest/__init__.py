"""Decode and assemble: OTLP -> spans -> traces (the model), then the sampling decision."""

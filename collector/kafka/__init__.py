"""The Kafka transport: the consuming collector loop, its offsets, dead letters and group guards."""

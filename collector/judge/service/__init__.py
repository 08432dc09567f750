"""Judging in the collector: the worker that judges sampled traces and stores the judgments
(``worker``), the judge workers' Kafka loop (``kafka_loop``), and the OpenTelemetry evaluation
events each judgment emits (``evaluation_events``)."""

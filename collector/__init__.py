"""ragpulse collector."""

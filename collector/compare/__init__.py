"""``ragpulse compare``: online comparison of a service's variants (load, stats, run, reports)."""

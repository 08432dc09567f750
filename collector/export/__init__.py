"""The weekly export of failing production cases into the offline eval set (``ragpulse export``)."""

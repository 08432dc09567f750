"""The ragpulse monitoring mixin: objectives, Prometheus rules, promtool tests and Grafana dashboards.

One config (``objectives.yaml``, loaded by :mod:`.config`) holds every objective,
threshold and window. :mod:`.rules` renders ``rules/*.yaml`` from it,
:mod:`.rule_tests` the promtool unit tests in ``rules/tests/``,
:mod:`.dashboards` the Grafana dashboards in ``dashboards/``, and the demo
report reads its thresholds from the same config. ``python -m
ragpulse.collector.monitoring render`` writes them all; :mod:`.push` provisions
the dashboards (and, optionally, the alerts) in Grafana.
"""

"""Sessions: the turns of each conversation (``session.id``), their judged and flagged turns,
what followed a flagged turn (a re-ask, the user leaving, the conversation going on), read from
the store's session views (docs/schema.md "Sessions") for metrics, reports and the review page."""

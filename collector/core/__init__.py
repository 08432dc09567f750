"""The collector's ground floor: pieces every stage uses, importing no stage.

The span and trace model (:mod:`.model`), the metrics registry and what it reads at scrape
time (:mod:`.metrics`, :mod:`.state`, :mod:`.variants`, :mod:`.batch_histogram`,
:mod:`.poll_watch`), the one boundary to the native module (:mod:`.native`), bounded JSON
parsing (:mod:`.json_depth`), query text normalisation (:mod:`.text`) and how a feedback span
is recognised (:mod:`.feedback_spans`). Stages (ingest, storage, feedback, serve, kafka, judge,
export, ...) import from here; nothing here imports a stage.
"""

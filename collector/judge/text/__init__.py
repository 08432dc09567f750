"""The local judge's reading of text: tokens and keys (``tokens``), numbers, dates, units,
morphology, word relations (``lexicon``, with the packaged WordNet table in ``wordnet/``),
acronyms, hedge and negation markers, and formatting. Nothing here knows about claims or
verdicts; everything above reads text through these modules."""

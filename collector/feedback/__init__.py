"""Feedback on RAG calls: storage in ``rag_feedback``, implicit re-asks, re-judging, import."""

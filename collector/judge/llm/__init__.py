"""The LLM judge (``judge.LLMJudge``, any litellm model): its prompt (``prompt``, with the
versioned prompt files in ``prompts/``) and its cost budget (``budget``)."""

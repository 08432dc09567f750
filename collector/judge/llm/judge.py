"""The LLM judge: one structured litellm request per trace.

The answer's claims are extracted locally (the same extractor as the local
judge, so both judges score the same claims) and sent with the chunks in one
request; the reply must validate against :func:`.prompt.response_schema`. An
invalid reply gets one repair request; a second failure is recorded as a judge
error (null scores, never 0). Transient failures (timeouts, 429, 5xx,
connection errors) are retried with exponential backoff and half jitter
(each delay drawn between half the cap and the cap), honouring
``Retry-After``. A semaphore bounds concurrent requests, a
:class:`.budget.CostBudget` pauses judging when the per-minute/per-hour spend
is used up, and a :class:`.cache.JudgmentCache` answers repeated content
without a request.

``judge(record)`` is synchronous and thread-safe: coroutines run on one
private event loop thread. ``judge_many(records)`` judges a batch
concurrently.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import os
import random
import threading
import time
from email.utils import parsedate_to_datetime
from typing import Any

from ..cache import JudgmentCache, content_key
from ..local.claims import EXTRACTION_VERSION, Claim, extract_claims
from ..local.evidence import build_evidence, is_usable
from ..local.judge import attach_citations, lexical_utilization
from ..record import InvalidRecord, error_record, normalise_input
from ..scoring import ClaimJudgment, TraceFacts, assemble
from .budget import CostBudget
from .prompt import load_prompt, response_schema

__all__ = ["LLMJudge", "JudgeResponseError"]

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class JudgeResponseError(Exception):
    """The model's reply was not valid JSON for the schema (after the repair retry)."""


def _request_args(
    model: str,
    api_base: str | None,
    api_key: str | None,
    sampling: dict[str, Any],
    json_mode: bool,
    prices: tuple[float | None, float | None],
) -> dict[str, Any]:
    """``litellm.acompletion``'s arguments but the messages; its and the client's own retries off
    (the judge retries, so request counts are exact)."""
    args: dict[str, Any] = {"model": model, **sampling, "max_retries": 0, "num_retries": 0}
    if api_base:
        args["api_base"] = api_base
    if api_key:
        args["api_key"] = api_key
    elif api_base:
        args["api_key"] = os.environ.get("OPENAI_API_KEY", "ragpulse-local")
    if json_mode:
        args["response_format"] = {"type": "json_object"}
    if prices[0] is not None or prices[1] is not None:
        # With explicit prices litellm need not search its model map (slow for unknown models).
        args["input_cost_per_token"] = prices[0] or 0.0
        args["output_cost_per_token"] = prices[1] or 0.0
    return args


#: The counters in :attr:`LLMJudge.stats`.
_COUNTERS = ("requests", "retries", "rate_limited", "timeouts", "repairs", "errors", "cache_hits", "judged")


class LLMJudge:
    """Judge traces with an LLM through litellm.

    Settings (pinned in :attr:`judge_id` where they change verdicts): ``api_base``,
    ``api_key``, ``prompt_version`` ("v2"), ``temperature`` (0), ``max_tokens``,
    ``timeout`` (s per request), ``max_retries`` (transient failures), ``backoff_base`` /
    ``backoff_max`` (s), ``concurrency``, ``budget_per_minute_usd``, ``budget_per_hour_usd``,
    ``budget_minute_seconds`` / ``budget_hour_seconds`` (window lengths), ``input_cost_per_token`` /
    ``output_cost_per_token`` (explicit prices when litellm has none), ``cache_size``,
    ``shuffle_chunks`` (+ ``shuffle_seed``), ``max_chunk_chars``, ``require_citations``,
    ``response_format`` (send ``{"type": "json_object"}``, default True).
    """

    kind = "llm"

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        prompt_version: str = "v2",
        temperature: float = 0.0,
        max_tokens: int = 2048,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        concurrency: int = 16,
        budget_per_minute_usd: float | None = None,
        budget_per_hour_usd: float | None = None,
        budget_minute_seconds: float = 60.0,
        budget_hour_seconds: float = 3600.0,
        input_cost_per_token: float | None = None,
        output_cost_per_token: float | None = None,
        cache_size: int = 10_000,
        shuffle_chunks: bool = False,
        shuffle_seed: int = 0,
        max_chunk_chars: int = 4000,
        require_citations: bool = False,
        response_format: bool = True,
    ) -> None:
        if not model:
            raise ValueError("an LLM judge needs a litellm model name")
        self.model = model
        self.prompt = load_prompt(prompt_version)
        self.input_cost_per_token = input_cost_per_token
        self.output_cost_per_token = output_cost_per_token
        # What every request sends besides its messages: fixed for the judge's life.
        self._request = _request_args(
            model,
            api_base,
            api_key,
            {"temperature": float(temperature), "max_tokens": int(max_tokens), "timeout": float(timeout)},
            bool(response_format),
            (input_cost_per_token, output_cost_per_token),
        )
        self.max_retries = int(max_retries)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.concurrency = max(1, int(concurrency))
        self.shuffle_chunks = bool(shuffle_chunks)
        self.shuffle_seed = int(shuffle_seed)
        self.max_chunk_chars = int(max_chunk_chars)
        self.require_citations = bool(require_citations)
        self.budget = CostBudget(
            budget_per_minute_usd,
            budget_per_hour_usd,
            minute_seconds=budget_minute_seconds,
            hour_seconds=budget_hour_seconds,
        )
        self.cache = JudgmentCache(cache_size)
        self.judge_id = self._judge_id()
        self.stats: dict[str, float] = dict.fromkeys(_COUNTERS, 0)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sem: asyncio.Semaphore | None = None
        self._start_lock = threading.Lock()

    def _judge_id(self) -> str:
        """``llm-<prompt version>:<model>:<digest>``, the digest over every setting that changes verdicts."""
        pinned = {
            "model": self.model,
            "prompt": f"{self.prompt.version}:{self.prompt.digest}",
            "temperature": self._request["temperature"],
            "max_tokens": self._request["max_tokens"],
            "shuffle_chunks": self.shuffle_chunks,
            "shuffle_seed": self.shuffle_seed if self.shuffle_chunks else None,
            "max_chunk_chars": self.max_chunk_chars,
            "require_citations": self.require_citations,
            "claims": EXTRACTION_VERSION,
        }
        digest = hashlib.sha256(json.dumps(pinned, sort_keys=True).encode()).hexdigest()[:8]
        return f"llm-{self.prompt.version}:{self.model}:{digest}"

    # -- public API ---------------------------------------------------------------------------
    @property
    def budget_pauses(self) -> int:
        """How many times judging paused because a cost budget was used up."""
        return self.budget.pauses

    def judge(self, record: dict[str, Any]) -> dict[str, Any]:
        """Judge one record (blocking, thread-safe); never raises for a bad judgment."""
        return asyncio.run_coroutine_threadsafe(self.ajudge(record), self._ensure_loop()).result()

    def judge_many(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Judge a batch concurrently (up to ``concurrency`` requests in flight), in order."""

        async def _all() -> list[dict[str, Any]]:
            return list(await asyncio.gather(*(self.ajudge(r) for r in records)))

        return asyncio.run_coroutine_threadsafe(_all(), self._ensure_loop()).result()

    def close(self) -> None:
        """Stop the private event loop thread (pending background tasks are cancelled)."""
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is None or thread is None or not loop.is_running():
            return

        async def _cancel_rest() -> None:
            me = asyncio.current_task()
            rest = [t for t in asyncio.all_tasks() if t is not me]
            for t in rest:
                t.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(_cancel_rest(), loop).result(timeout=5)
        except Exception:
            pass
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        if not loop.is_running():
            loop.close()

    async def ajudge(self, record: dict[str, Any]) -> dict[str, Any]:
        """Judge one record on the current event loop."""
        t0 = time.perf_counter()
        trace_id = str(record.get("trace_id", "")) if isinstance(record, dict) else ""
        try:
            rec = normalise_input(record)
        except InvalidRecord as exc:
            self.stats["errors"] += 1
            return error_record(trace_id, self.judge_id, f"invalid record: {exc}", judge_tier="llm")
        key = content_key(self.judge_id, rec)
        cached = self.cache.get(key)
        if cached is not None:
            self.stats["cache_hits"] += 1
            cached["trace_id"] = rec["trace_id"]
            cached["cache_hit"] = True
            cached["judge_cost_usd"] = 0.0
            return cached
        try:
            out = await self._judge(rec, key)
        except Exception as exc:
            # An invalid reply; a transport failure after retries, a provider error, a judge bug.
            self.stats["errors"] += 1
            if isinstance(exc, JudgeResponseError):
                why = f"invalid judge response: {exc}"
            else:
                why = f"{type(exc).__name__}: {str(exc)[:300]}"
            latency = round((time.perf_counter() - t0) * 1000, 3)
            return error_record(
                rec["trace_id"], self.judge_id, why, judge_tier="llm", judge_latency_ms=latency
            )
        out["judge_latency_ms"] = round((time.perf_counter() - t0) * 1000, 3)
        out["cache_hit"] = False
        self.stats["judged"] += 1
        self.cache.put(key, out)
        return out

    # -- internals ----------------------------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._start_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def _run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=_run, name="ragpulse-llm-judge", daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
                atexit.register(self.close)
            return self._loop

    def _semaphore(self) -> asyncio.Semaphore:
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.concurrency)
        return self._sem

    async def _judge(self, rec: dict[str, Any], key_hash: str) -> dict[str, Any]:
        chunk_ids = [c["id"] for c in rec["chunks"]]
        extracted = extract_claims(rec["answer"], chunk_ids)
        claims = extracted.claims
        if rec["citations"]:
            attach_citations(claims, rec["citations"], rec["answer"], chunk_ids)
        usable = {c["id"]: is_usable(c["metadata"])[0] for c in rec["chunks"]}
        view = [
            {
                "id": c["id"],
                "content": c["content"][: self.max_chunk_chars],
                "usable": usable[c["id"]],
                "status": (c["metadata"] or {}).get("status"),
                **{k: c[k] for k in ("source_type", "tool", "query") if c.get(k)},
            }
            for c in rec["chunks"]
        ]
        if self.shuffle_chunks:
            random.Random(f"{self.shuffle_seed}:{key_hash}").shuffle(view)
        claim_view = [
            {"id": i + 1, "text": c.text, "cited": list(dict.fromkeys(c.citations))}
            for i, c in enumerate(claims)
        ]
        messages = self.prompt.render(
            nonce="RP" + key_hash[:12],
            query=rec["query"],
            chunks=view,
            answer=rec["answer"],
            claims=claim_view,
            conversation=rec["conversation"],
        )
        schema = response_schema([c["id"] for c in claim_view], chunk_ids, self.prompt.reads_conversation)
        parsed, cost = await self._valid_reply(messages, schema)
        judged = _claim_judgments(claims, parsed)
        relied_on = {cid for j in judged for cid in j.supporting}
        facts = TraceFacts(
            chunk_ids=chunk_ids,
            usable=usable,
            abstained=bool(parsed["abstained"]),
            answerable=bool(parsed["answerable"]),
            utilization=lexical_utilization(
                [c.text for c in claims],
                [j.supporting for j in judged],
                # Only the chunks a verdict rests on are read: tokenise just those.
                build_evidence([c for c in rec["chunks"] if c["id"] in relied_on]),
            ),
            citations_required=self.require_citations,
        )
        extra = {
            "judge_tier": "llm",
            "judge_cost_usd": round(cost, 8),
            "chunk_order": [c["id"] for c in view],
        }
        return assemble(rec["trace_id"], self.judge_id, judged, facts, extra=extra)

    async def _valid_reply(
        self, messages: list[dict[str, str]], schema: dict[str, Any]
    ) -> tuple[dict[str, Any], float]:
        """The model's reply parsed against ``schema`` and the cost of getting it: one repair
        request (the invalid reply and what was wrong with it) before giving up."""
        reply, cost = await self._ask(messages)
        parsed, problem = _validate(reply, schema)
        if problem is not None:
            self.stats["repairs"] += 1
            repair = [
                *messages,
                {"role": "assistant", "content": reply[:4000]},
                {
                    "role": "user",
                    "content": f"Your reply was invalid: {problem}. Reply again with only the JSON object, "
                    "exactly in the required shape.",
                },
            ]
            reply, cost2 = await self._ask(repair)
            cost += cost2
            parsed, problem = _validate(reply, schema)
            if problem is not None:
                raise JudgeResponseError(problem)
        assert parsed is not None
        return parsed, cost

    async def _ask(self, messages: list[dict[str, str]]) -> tuple[str, float]:
        """One completion with retries; returns (reply text, cost in USD)."""
        import litellm

        litellm.suppress_debug_info = True
        attempt = 0
        while True:
            reserved = 0.0
            try:
                async with self._semaphore():
                    # Inside the concurrency slot, so the budget sees every finished request's cost.
                    reserved = await self.budget.acquire()
                    self.stats["requests"] += 1
                    resp = await litellm.acompletion(messages=messages, **self._request)
            except Exception as exc:
                self.budget.record(reserved, 0.0)
                delay = self._retry_delay(exc, attempt)
                if delay is None or attempt >= self.max_retries:
                    raise
                attempt += 1
                self.stats["retries"] += 1
                await asyncio.sleep(delay)
                continue
            cost = self._cost(resp)
            self.budget.record(reserved, cost)
            content = resp.choices[0].message.content or ""
            return content, cost

    def _retry_delay(self, exc: Exception, attempt: int) -> float | None:
        """Seconds to wait before retrying ``exc``, or None when it is not transient."""
        import litellm

        if isinstance(exc, litellm.RateLimitError):
            self.stats["rate_limited"] += 1
            after = _retry_after(exc)
            if after is not None:
                return min(after, self.backoff_max) + random.uniform(0, self.backoff_base / 4)
        elif isinstance(exc, litellm.Timeout):
            self.stats["timeouts"] += 1
        elif not isinstance(
            exc,
            (
                litellm.APIConnectionError,
                litellm.InternalServerError,
                litellm.ServiceUnavailableError,
                litellm.BadGatewayError,
            ),
        ):
            return None
        cap = min(self.backoff_max, self.backoff_base * (2**attempt))
        return random.uniform(cap / 2, cap)  # exponential backoff with (half) jitter

    def _cost(self, resp: Any) -> float:
        usage = getattr(resp, "usage", None)
        if self.input_cost_per_token is not None or self.output_cost_per_token is not None:
            pin = getattr(usage, "prompt_tokens", 0) or 0
            pout = getattr(usage, "completion_tokens", 0) or 0
            return pin * (self.input_cost_per_token or 0.0) + pout * (self.output_cost_per_token or 0.0)
        try:
            import litellm

            return float(litellm.completion_cost(completion_response=resp) or 0.0)
        except Exception:
            return 0.0


def _claim_judgments(claims: list[Claim], parsed: dict[str, Any]) -> list[ClaimJudgment]:
    """The reply's verdict on each extracted claim, in claim order (a missing one is an error)."""
    by_id = {c["id"]: c for c in parsed["claims"]}
    judged: list[ClaimJudgment] = []
    for i, claim in enumerate(claims):
        v = by_id.get(i + 1)
        if v is None:
            raise JudgeResponseError(f"claim {i + 1} missing from the reply")
        verdict = v["verdict"]
        restated = verdict == "supported" and bool(v.get("restates_user"))  # no chunk: the user's words
        kept = verdict == "supported" and not restated
        supporting = list(dict.fromkeys(v.get("supporting_chunk_ids") or [])) if kept else []
        judged.append(
            ClaimJudgment(
                text=claim.text,
                verdict=verdict,
                supporting=supporting,
                citations=list(claim.citations),
                citation_ok=[cid in supporting for cid in claim.citations],
                on_topic=bool(v.get("on_topic", True)),
                source=(v.get("source") or "hallucination") if verdict != "supported" else None,
                omitted=v.get("omitted_condition") or None,
                restates_user=restated,
            )
        )
    return judged


def _retry_after(exc: Exception) -> float | None:
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if not headers:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    if value is None:
        ms = headers.get("retry-after-ms")
        return float(ms) / 1000 if ms else None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _validate(reply: str, schema: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    import jsonschema

    text = reply.strip()
    if text.startswith("```"):
        text = text.strip("`")
        if text.lower().startswith("json"):
            text = text[4:]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg})"
    # The schema is ours and known to be valid: skip the (slow) metaschema check of jsonschema.validate.
    validator = jsonschema.Draft202012Validator(schema)
    if validator.is_valid(data):  # the usual case: skip collecting and ranking errors
        error = None
    else:
        error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "top level"
        return None, f"schema violation at {where}: {error.message[:200]}"
    ids = [c["id"] for c in data["claims"]]
    if len(set(ids)) != len(ids):
        return None, "duplicate claim ids"
    return data, None

"""Judge throughput.

1. Local judge on one core: synthetic traces of 10 chunks x ~500 characters
   and 4-sentence answers with citation markers (half copied from the cited
   chunk, half made up). The text is English-shaped: ~40% function words and
   content words drawn Zipf-distributed from a 4,000-word pseudo-vocabulary.
   The process is pinned to one CPU and rates are per CPU second (median of
   repeated passes), printed side by side with the cost of merely tokenising
   the same traces, so a busy machine shows up in both figures.
2. With ``--minilm`` (needs ``make minilm``), on the same kind of traces and core: the
   MiniLM second tier alone (every claim escalated, band [0, 1], ``rescore_settled``) and the
   default tiered policy (``get_judge("tiered", minilm={})``: tier 2 on the claims in
   [0.35, 0.65) that no chunk supports on its own), with the share of claims escalated. Each trace has chunks of its own, so the tier's sentence
   cache never hits across traces here: a lower bound for real traffic. The pseudo-words
   split into many more word pieces than English does, so the same two rates are also
   measured, in the same run, on traces of the same shape cut from the development data
   (``../shared/data``, when present), up to ten chunks cut to ~500 characters: four atomic
   facts of a FActScore biography (short: ~6 words each) against its article, and four claims
   of a Factcheck-GPT response (answer sentences, ~12 words) against their retrieved passages,
   the closest of the three to the synthetic traces' answers.
   ``--entailment`` measures the entailment tier (its model ships with the package) the same
   way, against its own targets (alone >= 15 traces/s, default band >= 50).
3. LLM judge through litellm against a local OpenAI-compatible server (in its
   own process, like a remote provider) that answers every request after
   300 ms: judged traces per second and the server-side request count (must
   equal the number of traces: one request per trace).

Usage: python bench/judge_throughput.py [--local-traces 600] [--llm-traces 400] [--concurrency 64] [--local-only]
       [--minilm] [--entailment] [--minilm-traces 120]
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.judge_llm_server
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: no BLAS threads
    os.environ.setdefault(_var, "1")

from ragpulse.collector.judge import get_judge  # noqa: E402
from ragpulse.collector.judge.text.tokens import profile  # noqa: E402

__all__ = ["main", "synthetic_traces"]

_STOP = (
    "the of and to in a is that for it as with was on be by this are or from at an which have has not "
    "their its may must will all any each other these such within after before"
).split()
_SYLLABLES = "ba re to li na ko se di ver mon tal pre con sti gra lu fe mar po ten".split()


def _vocabulary(rng: random.Random, size: int = 4000) -> tuple[list[str], list[float]]:
    """Pseudo-words in random order with Zipf weights (rank r has weight 1/r)."""
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    ordered = sorted(words)
    rng.shuffle(ordered)
    cum, total = [], 0.0
    for r in range(1, size + 1):
        total += 1.0 / r
        cum.append(total)
    return ordered, cum


def _sentence(rng: random.Random, n: int, vocab: tuple[list[str], list[float]]) -> str:
    """Roughly English-shaped: ~40% function words, content words Zipf-distributed."""
    words_, cum = vocab
    words = []
    for _ in range(n):
        if rng.random() < 0.4:
            words.append(rng.choice(_STOP))
        else:
            words.append(rng.choices(words_, cum_weights=cum)[0])
    if rng.random() < 0.5:
        words.insert(rng.randrange(len(words)), str(rng.choice((5, 7, 24, 30, 90, 180))))
    return " ".join(words).capitalize() + "."


def synthetic_traces(n: int, seed: int = 0) -> list[dict]:
    """``n`` traces: 10 chunks of about 500 characters, a 4-sentence cited answer."""
    rng = random.Random(seed)
    vocab = _vocabulary(random.Random(1234))
    out = []
    for t in range(n):
        chunks = []
        for c in range(10):
            text = ""
            while len(text) < 500:
                text += _sentence(rng, rng.randint(8, 14), vocab) + " "
            chunks.append({"id": f"D{c + 1}", "content": text[:500].rsplit(" ", 1)[0] + ".", "score": 0.5})
        sents = []
        for _ in range(4):
            k = rng.randrange(10)
            if rng.random() < 0.5:  # copied from the chunk it cites
                src = chunks[k]["content"].split(". ")[0].rstrip(".")
            else:  # made up
                src = _sentence(rng, 10, vocab).rstrip(".")
            sents.append(f"{src} [{k + 1}].")
        out.append(
            {
                "trace_id": f"{t:032x}",
                "query": _sentence(rng, 8, vocab).rstrip(".") + "?",
                "answer": " ".join(sents),
                "chunks": chunks,
            }
        )
    return out


def bench_local(n: int, repeats: int = 5) -> None:
    pinned = _pin()
    traces = synthetic_traces(n)
    judge = get_judge("local")
    for r in traces[:20]:
        judge.judge(r)  # warm caches
    tok_rates, rates = [], []
    outs: list[dict] = []
    for _ in range(repeats):  # alternate the two so a busy machine slows both alike
        t0 = time.process_time()
        for r in traces:
            profile(r["answer"])
            for c in r["chunks"]:
                profile(c["content"])
        tok_rates.append(n / (time.process_time() - t0))
        t0 = time.process_time()
        outs = [judge.judge(r) for r in traces]
        rates.append(n / (time.process_time() - t0))
    assert all(o["error"] is None for o in outs)
    claims = sum(len(o["claims"]) for o in outs) / len(outs)
    med, tok = statistics.median(rates), statistics.median(tok_rates)
    print(
        f"local judge ({pinned}; CPU time; median of {repeats} passes): {n} traces, {claims:.1f} claims/trace,"
    )
    print("  10 chunks x ~500 chars, 4-sentence answers with citation markers")
    print(f"  tokenising only   : {tok:8.0f} traces/s")
    print(
        f"  local judge       : {med:8.0f} traces/s   (target >= 300; passes {min(rates):.0f}..{max(rates):.0f}; "
        f"judge/tokenise time ratio {tok / med:.2f})"
    )


def _pin() -> str:
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        return "pinned to one CPU"
    except (AttributeError, OSError):
        return "not pinned (no sched_setaffinity)"


def _trace(i: int, query: str, claims: list[str], chunks: list[str]) -> dict:
    """A trace of the synthetic traces' shape: the claims as its answer, up to ten distinct
    chunks cut to ~500 characters."""
    cut = list(dict.fromkeys(c[:500].rsplit(" ", 1)[0] for c in chunks))[:10]
    return {
        "trace_id": f"{i:032x}",
        "query": query,
        "answer": " ".join(c.strip() for c in claims),
        "chunks": [{"id": f"D{k + 1}", "content": c, "score": 0.5} for k, c in enumerate(cut)],
    }


def dev_traces(n: int) -> dict[str, list[dict]]:
    """Up to ``n`` traces of the synthetic traces' shape in real English from the dev data, per
    kind of answer (empty without the data):

    - FActScore: four atomic facts of a biography (~6 words each) against its article's chunks;
    - Factcheck-GPT: four claims of one ChatGPT response (answer sentences, ~12 words each)
      against the passages retrieved for them (each record is one claim; a response's records
      share its ``response``).
    """
    import judge_dev_data as dev

    if not dev.DATA.is_dir():
        return {}
    bios = (r for r in dev.iter_records(dev.DATA, "factscore") if len(r["claims"]) >= 4 and r["chunks"])
    factscore = [
        _trace(i, r["query"], [t for t, _ in r["claims"][:4]], [c["content"] for c in r["chunks"]])
        for i, r in enumerate(itertools.islice(bios, n))
    ]
    by_response: dict[str, list[dict]] = {}
    for r in dev.iter_records(dev.DATA, "factcheck-gpt"):
        by_response.setdefault(r["response"], []).append(r)
    factcheck = [
        _trace(
            i,
            recs[0]["query"],
            [r["claims"][0][0] for r in recs[:4]],
            [c["content"] for r in recs[:4] for c in r["chunks"]],
        )
        for i, recs in enumerate(v for v in by_response.values() if len(v) >= 4)
    ][:n]
    return {
        "dev-data traces, FActScore atomic facts": factscore,
        "dev-data traces, Factcheck-GPT answer sentences": factcheck,
    }


# Per second tier: its name, and the traces/s targets of the tier alone and of its default band.
TIERS: dict[str, tuple[str, int, int]] = {
    "minilm": ("MiniLM second tier", 20, 100),
    "entailment": ("entailment tier", 15, 50),
}


def bench_tiers(n: int, kind: str = "minilm", repeats: int = 3) -> None:
    """A second tier alone and its default band, traces per CPU second, on the synthetic
    traces and on traces of the same shape from the dev data."""
    pinned = _pin()
    print(f"{TIERS[kind][0]} ({pinned}; CPU time; median of {repeats} passes)")
    sets = {"synthetic traces": synthetic_traces(n, seed=3)} | dev_traces(n)
    if len(sets) == 1:
        print("  dev-data traces: none (no ../shared/data)")
    for label, traces in sets.items():
        words = sum(len(r["answer"].split()) for r in traces) / len(traces)
        print(f"  {label}: {len(traces)} traces, ~{words:.0f} answer words each")
        _tier_rates(traces, kind, repeats)


def _tier_rates(traces: list[dict], kind: str, repeats: int) -> None:
    n = len(traces)
    # Tier 2 alone: every claim, even those one chunk supports on their own (which the tier
    # leaves to tier 1 by default): the tier's rate at its most expensive.
    settings = {"tier 2 alone (band [0, 1])": {"band": (0.0, 1.0), "rescore_settled": True}}
    settings["default tiered policy"] = {}
    for name, tier in settings.items():
        rates, outs = [], []
        for _ in range(repeats):  # a fresh judge per pass: no sentence state cached from the last
            judge = get_judge("tiered", **{kind: tier})
            judge.judge(synthetic_traces(1, seed=4)[0])  # warm up
            t0 = time.process_time()
            outs = [judge.judge(r) for r in traces]
            rates.append(n / (time.process_time() - t0))
        assert all(o["error"] is None for o in outs)
        claims = sum(len(o["claims"]) for o in outs)
        escalated = sum(o["tier2_claims"] for o in outs)
        target = TIERS[kind][1] if "alone" in name else TIERS[kind][2]
        print(
            f"    {name:<27}: {statistics.median(rates):8.1f} traces/s   (target >= {target}; passes "
            f"{min(rates):.1f}..{max(rates):.1f}; {escalated}/{claims} claims escalated, "
            f"{sum(o['tier2_claims'] > 0 for o in outs)}/{n} traces)"
        )


def _serve(urls: Any, count: Any, delay: float) -> None:
    """Child process: the scripted server, answering every request after ``delay`` seconds."""
    from tests.judge_llm_server import ScriptedLLMServer, all_supported

    def slow(body: dict, i: int):
        with count.get_lock():
            count.value += 1
        reply = all_supported(body, i)
        reply.delay = delay
        return reply

    srv = ScriptedLLMServer(slow).start()
    urls.put(srv.url)
    threading.Event().wait()  # until terminated by the parent


def bench_llm(n: int, concurrency: int) -> None:
    # The server runs in its own process, like a remote provider: it must not share the client's core.
    ctx = mp.get_context("fork")
    urls: mp.Queue = ctx.Queue()
    count = ctx.Value("i", 0)
    server = ctx.Process(target=_serve, args=(urls, count, 0.3), daemon=True)
    server.start()
    try:
        url = urls.get(timeout=30)
        judge = get_judge(
            "openai/fake-judge",
            api_base=url,
            concurrency=concurrency,
            input_cost_per_token=1e-7,
            output_cost_per_token=4e-7,
        )
        judge.judge(synthetic_traces(1, seed=2)[0])  # warm up litellm (import, client)
        warm = count.value
        traces = synthetic_traces(n, seed=1)
        t0 = time.perf_counter()
        outs = judge.judge_many(traces)
        dt = time.perf_counter() - t0
        requests = count.value - warm
        judge.close()
    finally:
        server.terminate()
        server.join(timeout=10)
    errors = sum(1 for o in outs if o["error"])
    ideal = concurrency / 0.3
    print(f"LLM judge via litellm, server latency 300 ms, concurrency {concurrency}: {n} traces")
    print(f"  judged traces/s   : {n / dt:8.1f}   (target >= 50; latency-bound ideal {ideal:.0f}/s)")
    print(f"  server requests   : {requests} for {n} traces ({requests / n:.2f} per trace), errors {errors}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--local-traces", type=int, default=600)
    ap.add_argument("--llm-traces", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--local-only", action="store_true", help="skip the LLM judge part")
    ap.add_argument("--minilm", action="store_true", help="also the MiniLM second tier (make minilm)")
    ap.add_argument("--minilm-traces", type=int, default=120)
    ap.add_argument("--entailment", action="store_true", help="also the entailment tier (shipped)")
    args = ap.parse_args(argv)
    if not args.local_only:
        bench_llm(args.llm_traces, args.concurrency)  # before pinning: the client may use both cores
    bench_local(args.local_traces)
    if args.minilm:
        bench_tiers(args.minilm_traces, "minilm")
    if args.entailment:
        bench_tiers(args.minilm_traces, "entailment")
    return 0


if __name__ == "__main__":
    sys.exit(main())

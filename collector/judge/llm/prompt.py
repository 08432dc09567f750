"""The versioned LLM judge prompt and the JSON schema of its response.

The prompt text lives in ``prompts/judge-<version>.txt``; its hash goes into
the judge id. Untrusted text (query, chunks, answer) is placed only between
delimiters that carry a nonce derived from the content hash, and any
occurrence of the delimiter syntax inside that text is defused, so retrieved
text cannot close its block and pose as instructions.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = ["Prompt", "load_prompt", "response_schema", "defuse"]


@dataclass(frozen=True, slots=True)
class Prompt:
    """A loaded prompt: version, system and user templates, content digest."""

    version: str
    system: str
    user: str
    digest: str

    def render(
        self,
        *,
        nonce: str,
        query: str,
        chunks: list[dict[str, Any]],
        answer: str,
        claims: list[dict[str, Any]],
    ) -> list[dict[str, str]]:
        """Chat messages for one trace. ``chunks`` carry id, content, usable, status."""
        blocks = []
        for ch in chunks:
            blocks.append(
                f'<<<{nonce} CHUNK id="{defuse(ch["id"])}" usable="{str(ch["usable"]).lower()}" '
                f'status="{defuse(str(ch.get("status") or "unknown"))}">>>\n'
                f"{defuse(ch['content'])}\n<<<{nonce} END CHUNK>>>"
            )
        claim_lines = [
            json.dumps({"id": c["id"], "text": c["text"], "cited_chunk_ids": c["cited"]}, ensure_ascii=False)
            for c in claims
        ] or ["(no claims were extracted; decide only abstained/answerable and return an empty list)"]
        user = (
            self.user.replace("{query}", defuse(query))
            .replace("{answer}", defuse(answer))
            .replace("{chunks}", "\n\n".join(blocks) or "(none)")
            .replace("{claims}", "\n".join(claim_lines))
            .replace("{nonce}", nonce)
        )
        return [
            {"role": "system", "content": self.system.replace("{nonce}", nonce)},
            {"role": "user", "content": user},
        ]


def defuse(text: str) -> str:
    """Neutralise delimiter syntax inside untrusted text (``<<<`` / ``>>>``)."""
    return text.replace("<<<", "‹‹‹").replace(">>>", "›››")


def load_prompt(version: str = "v1") -> Prompt:
    """Load ``prompts/judge-<version>.txt`` from the package."""
    raw = (
        resources.files("ragpulse.collector.judge.llm")
        .joinpath(f"prompts/judge-{version}.txt")
        .read_text("utf-8")
    )
    body = "\n".join(line for line in raw.splitlines() if not line.startswith("#"))
    try:
        _, rest = body.split("=== SYSTEM ===", 1)
        system, user = rest.split("=== USER ===", 1)
    except ValueError as exc:
        raise ValueError(f"prompt judge-{version}.txt lacks SYSTEM/USER sections") from exc
    return Prompt(version, system.strip(), user.strip(), hashlib.sha256(raw.encode()).hexdigest()[:8])


def response_schema(claim_ids: list[int], chunk_ids: list[str]) -> dict[str, Any]:
    """JSON schema the model's reply must satisfy for one trace."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["abstained", "answerable", "claims"],
        "properties": {
            "abstained": {"type": "boolean"},
            "answerable": {"type": "boolean"},
            "claims": {
                "type": "array",
                "minItems": len(claim_ids),
                "maxItems": len(claim_ids),
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["id", "verdict", "supporting_chunk_ids"],
                    "properties": {
                        "id": {"type": "integer", "enum": claim_ids} if claim_ids else {"type": "integer"},
                        "verdict": {"enum": ["supported", "unsupported", "contradicted"]},
                        "supporting_chunk_ids": {
                            "type": "array",
                            "items": {"enum": chunk_ids} if chunk_ids else {"type": "string"},
                        },
                        "on_topic": {"type": "boolean"},
                        "omitted_condition": {"type": ["string", "null"]},
                        "source": {"enum": ["hallucination", "noise", None]},
                    },
                },
            },
        },
    }

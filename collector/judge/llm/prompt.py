"""The versioned LLM judge prompt and the JSON schema of its response.

The prompt text lives in ``prompts/judge-<version>.txt``; its hash goes into
the judge id. Untrusted text (query, chunks, conversation, answer) is placed
only between delimiters that carry a nonce derived from the content hash, and
any occurrence of the delimiter syntax inside that text is defused, so
retrieved text cannot close its block and pose as instructions. A prompt whose
template has a ``{conversation}`` place (version 2 on) also gets the turns
before the query and each chunk's provenance (retrieval and its query, or tool,
its name and arguments), and its reply may say a claim restates the user.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ...contract import CLAIM_VERDICTS

__all__ = ["Prompt", "load_prompt", "response_schema", "defuse"]


@dataclass(frozen=True, slots=True)
class Prompt:
    """A loaded prompt: version, system and user templates, content digest."""

    version: str
    system: str
    user: str
    digest: str

    @property
    def reads_conversation(self) -> bool:
        """Whether the prompt shows the conversation and the chunks' provenance (version 2 on)."""
        return _CONVERSATION in self.user

    def render(
        self,
        *,
        nonce: str,
        query: str,
        chunks: list[dict[str, Any]],
        answer: str,
        claims: list[dict[str, Any]],
        conversation: list[dict[str, str]] | None = None,
    ) -> list[dict[str, str]]:
        """Chat messages for one trace. ``chunks`` carry id, content, usable, status (and
        source_type, tool, query); ``conversation`` the turns before the query."""
        provenance = self.reads_conversation
        blocks = []
        for ch in chunks:
            blocks.append(
                f'<<<{nonce} CHUNK id="{defuse(ch["id"])}" usable="{str(ch["usable"]).lower()}" '
                f'status="{defuse(str(ch.get("status") or "unknown"))}"{_provenance(ch) if provenance else ""}>>>\n'
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
            .replace(_CONVERSATION, _turns(conversation or [], nonce))
            .replace("{nonce}", nonce)
        )
        return [
            {"role": "system", "content": self.system.replace("{nonce}", nonce)},
            {"role": "user", "content": user},
        ]


_CONVERSATION = "{conversation}"


def _attribute(text: str) -> str:
    """Text as a delimiter attribute value: defused, its quotes and line breaks neutralised."""
    return defuse(text).replace('"', "'").replace("\n", " ")


def _provenance(chunk: dict[str, Any]) -> str:
    """The chunk header's provenance attributes: ``source``, and ``tool`` or ``query``."""
    source = chunk.get("source_type") or "retrieval"
    out = f' source="{_attribute(source)}"'
    if chunk.get("tool"):
        out += f' tool="{_attribute(chunk["tool"])}"'
    if chunk.get("query"):
        out += f' {"arguments" if source == "tool" else "query"}="{_attribute(chunk["query"])}"'
    return out


def _turns(conversation: list[dict[str, str]], nonce: str) -> str:
    """The turns before the query, each in its own delimited block ('(none)' without any)."""
    blocks = [
        f'<<<{nonce} TURN role="{_attribute(m["role"])}">>>\n{defuse(m["content"])}\n<<<{nonce} END TURN>>>'
        for m in conversation
    ]
    return "\n\n".join(blocks) or "(none)"


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


def response_schema(
    claim_ids: list[int], chunk_ids: list[str], restates_user: bool = False
) -> dict[str, Any]:
    """JSON schema the model's reply must satisfy for one trace (``restates_user``: the prompt
    asks whether a claim restates the user, version 2 on)."""
    schema = {
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
                        "verdict": {"enum": list(CLAIM_VERDICTS)},
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
    if restates_user:
        schema["properties"]["claims"]["items"]["properties"]["restates_user"] = {"type": "boolean"}
    return schema

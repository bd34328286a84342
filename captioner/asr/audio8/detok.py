"""Visible-text filtering and incremental detokenisation of Audio8 tokens.

Visible text = generated tokens minus ``[STREAMING_PAD]``, ``[STREAMING_WORD]``, BOS, pad and
EOS (reference ``decode_visible_text``), decoded by the checkpoint's own ``tokenizers``
tokenizer. Qwen2 is a byte-level BPE: one token can hold part of a multi-byte UTF-8
character, which decodes to U+FFFD on its own. The decoder therefore holds tokens back while
their text ends in U+FFFD, so a delta never carries half a character.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Longest run of held tokens (a UTF-8 character has at most 4 bytes); beyond it the text
#: really contains U+FFFD and is released.
MAX_HELD_TOKENS = 4
_REPLACEMENT = "\ufffd"


@dataclass
class IncrementalDetokenizer:
    """Per-session byte-safe detokeniser.

    Attributes:
        pending: visible token ids not yet released as text.
        pending_step: clock-step index of the first pending token (for delta start times).
    """

    pending: list[int] = field(default_factory=list)
    pending_step: int = -1

    def push(self, tokenizer: Any, token_id: int, step: int) -> tuple[str, int] | None:
        """Add one visible token.

        Args:
            tokenizer: ``tokenizers.Tokenizer``.
            token_id: a visible token id.
            step: its clock-step index.

        Returns:
            ``(text, first_step)`` when whole characters are ready, else None.
        """
        if not self.pending:
            self.pending_step = step
        self.pending.append(int(token_id))
        text = tokenizer.decode(self.pending, skip_special_tokens=True)
        if text.endswith(_REPLACEMENT) and len(self.pending) < MAX_HELD_TOKENS:
            return None
        return self._release(text)

    def flush(self, tokenizer: Any) -> tuple[str, int] | None:
        """Release whatever is held (end of stream)."""
        if not self.pending:
            return None
        return self._release(tokenizer.decode(self.pending, skip_special_tokens=True))

    def _release(self, text: str) -> tuple[str, int]:
        first = self.pending_step
        self.pending = []
        self.pending_step = -1
        return text, first

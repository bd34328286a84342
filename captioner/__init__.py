"""captioner: live captions from microphone and system audio with streaming ASR models."""

__version__ = "0.1.0"

"""captioner.asr"""

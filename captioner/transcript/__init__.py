"""captioner.transcript"""

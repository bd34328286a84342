"""captioner.audio"""

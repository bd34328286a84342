"""captioner.ui"""

"""captioner.engine"""

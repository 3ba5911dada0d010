"""Sandbox: run untrusted submission code in a child process and move values across the trust boundary."""

"""The proxy's key and what it signs: audit checkpoints, and requests (Web Bot Auth).

- keys: the Ed25519 key, made once, read at start-up, never logged
- messages: RFC 9421 message signatures of requests, Web Bot Auth's profiles (pure)
- directory: the key directory and Signature Agent Card a site verifies against (pure)
- directory_server: the directory served on a port of its own
"""

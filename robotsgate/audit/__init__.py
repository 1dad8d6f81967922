"""The audit log and its evidence: every refusal is a record, every record a link in a chain.

- records: what one line holds (AuditRecord, its Event), field by field
- log: the file: one write per line, rotation, several proxies on one file
- chain: each proxy's chain of lines and its signed checkpoints
- chain_state: where each chain stands, kept beside the log between runs
- verify: which line of a log was changed, removed, inserted or moved (pure)
"""

"""HTTP 402: prices, budgets and the ledgers that keep what bots pay within them.

- spending: one grammar for prices; budgets per bot; memory and Redis ledgers
"""

"""`robotsgate run`: one bot behind the gate.

- environment.py  the child's environment: the proxy and its CA for every common ecosystem
- summary.py      what the run's proxy counted, said in one summary when the bot ends
- namespace.py    --sealed: the bot's own network namespace, loopback only, entered as the
                  child starts (unprivileged through a user namespace)
- relay.py        the one way out of that namespace: its loopback listener, bridged to the proxy
"""

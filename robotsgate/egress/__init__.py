"""Where bots may be sent: which addresses may be dialled, and names resolved once and pinned.

- addresses: IP addresses and networks, read one way
- policy: the classes of addresses refused and allowed (pure)
- resolver: destinations resolved once, classified, dialled at the address classified
"""

"""Rights a site states beyond robots.txt's rules, fetched under the proxy's own name and kept:
RSL licences and the licence servers that grant them, and TDMRep's file.

- licenses: the RSL licence documents a site names, fetched within a budget and kept
- judging: what those documents say of one request for a bot's declared purposes
- tokens: licences obtained from licence servers (the Open License Protocol)
- servers: the operator's credentials per licence server
- tdmrep: each origin's /.well-known/tdmrep.json and its rule for a path
- kept: what licences and tdmrep.json share: one fetch per document, how long it is kept
"""

"""Rights a site states beyond robots.txt's rules, fetched under the proxy's own name and kept:
RSL licences and the licence servers that grant them, and TDMRep's file.

- licenses: RSL licences robots.txt names, judged for a bot's declared purposes
- servers: the operator's credentials per licence server
- tdmrep: each origin's /.well-known/tdmrep.json and its rule for a path
"""

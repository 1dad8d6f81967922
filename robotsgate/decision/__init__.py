"""The decision, pure (no mitmproxy): a request's facts in, a plan out; and the judgement of
what an answer states of its use.

- request: `Facts`, one pass over the header fields (`Seen`), and what a request must look
  like to be decided at all (bytes, framing, upgrades);
- names: every name of the destination agrees with the origin decided (which addresses may be
  dialled is robotsgate.egress's, below the fetcher that also obeys it);
- identity, purposes: which bot a request is from, and what it crawls for;
- gate: robots.txt, usage preferences, licences, TDMRep, Visit-time and the politeness slot:
  a `Request` in, a `Verdict` out (verdict: the two values);
- plan: `Answer` or `Forward` (the request that leaves, built from the decision);
- policy: `Exchange.decide`, the order in which all of it is decided;
- stated: what an answer states of its own use, judged with robots.txt's and the page's.

Nothing is imported here: the options read identity and purposes without loading the rest.
"""

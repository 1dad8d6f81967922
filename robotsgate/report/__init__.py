"""The audit log summed up for people: what the bots were blocked from, and why.

- summary: the log read in one pass, in bounded memory
- counts: the bounded counters it keeps (TopCounts, Breakdown, Sums)
- text: the summary as the tables `robotsgate report` prints
- html: the summary as one self-contained page
"""

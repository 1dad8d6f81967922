"""Configuration: every robots_* option once, as data, read into one frozen Settings; the
services assembled from Settings, bottom up (no mitmproxy); and the references the
documentation and `robotsgate options` are written from.

- options: the options and Settings
- assemble: Settings -> the running services
- reference: the tables written from the code's declarations
"""

"""`robotsgate keygen`, `directory` and `verify`: the proxy's key, the directory that publishes
it for sites (Web Bot Auth), and the check that an audit log is the one the proxy wrote."""

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from typing import IO

from robotsgate.audit.verify import verify
from robotsgate.cli.common import FOUND, OK, CliError, Commands
from robotsgate.signing import directory as agent_directory
from robotsgate.signing import keys as signing_keys


def run_keygen(args: argparse.Namespace) -> int:
    try:
        key = signing_keys.generate(args.file)
    except FileExistsError:
        raise CliError(f"{args.file} exists: robotsgate keygen never writes over a key (move "
                       f"it away first, or keep it: it may still be needed to verify old "
                       f"logs)") from None
    except OSError as exc:
        raise CliError(f"cannot write {args.file}: {exc.strerror or exc}") from None
    public = key.public
    print(f"wrote {args.file} (Ed25519, mode 600); key id {public.keyid}", file=sys.stderr)
    print(f"use it: --set robots_signing_key={args.file}", file=sys.stderr)
    print(json.dumps({"keys": [public.jwk()]}, indent=2))  # the public half: to publish
    return OK


def _public_keys(paths: list[str]) -> list[signing_keys.PublicKey]:
    """The public keys of every --key, each once."""
    keys: list[signing_keys.PublicKey] = []
    for path in paths:
        try:
            keys += signing_keys.public_keys(path)
        except ValueError as exc:
            raise CliError(f"--key: {exc}") from None
    return list(dict.fromkeys(keys))


def run_directory(args: argparse.Namespace) -> int:
    keys = _public_keys(args.key)
    if args.card is None:
        print(json.dumps({"keys": [key.jwk() for key in keys]}, indent=2))
        return OK
    try:
        fields = agent_directory.read_card(args.card)
    except ValueError as exc:
        raise CliError(f"--card: {exc}") from None
    print(json.dumps(agent_directory.card(fields, keys), indent=2))
    return OK


def run_verify(args: argparse.Namespace) -> int:
    keys = _public_keys(args.key)
    with _opened(args.files) as streams:
        report = verify(streams, keys)
    for problem in report.problems:
        print(problem)
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    if not keys:
        print("note: no --key given: checkpoints' signatures were not checked, and the chain "
              "alone does not show an edit made with its hashes recomputed", file=sys.stderr)
    print(f"covered: {report.covered()}", file=sys.stderr)
    summary = (f"{report.lines} line(s), {report.chained} chained, "
               f"{report.vouched} vouched for by a signed checkpoint, "
               f"{len(report.problems)} problem(s)")
    print(("verified: " if report.ok else "NOT verified: ") + summary, file=sys.stderr)
    return OK if report.ok else FOUND


@contextlib.contextmanager
def _opened(paths: list[str]) -> Iterator[list[tuple[str, IO[bytes]]]]:
    with contextlib.ExitStack() as stack:
        streams: list[tuple[str, IO[bytes]]] = []
        for path in paths:
            try:
                streams.append((path, stack.enter_context(open(path, "rb"))))
            except OSError as exc:
                raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
        yield streams


# Arguments declared as every command's are (argparse): alike in shape, not in meaning.
def add_parsers(commands: Commands) -> None:
    """`robotsgate keygen`, `directory` and `verify`: their arguments."""
    p = commands.add_parser(
        "keygen", help="make the proxy's Ed25519 signing key",
        description="Write a new Ed25519 key to FILE (PEM, mode 600; never over a file that "
                    "exists) for robots_signing_key, and print its public half as a JWK Set "
                    "(what robotsgate verify --key takes, and what to give auditors).")
    p.add_argument("file", metavar="FILE")
    p.set_defaults(run=run_keygen)
    p = commands.add_parser(
        "directory", help="print the key directory to publish for Web Bot Auth",
        description="Print the HTTP message signatures directory (a JWK Set, media type "
                    "application/http-message-signatures-directory+json) of the given keys, "
                    "for the operator to serve at the robots_signature_agent URL "
                    "(/.well-known/http-message-signatures-directory): sites fetch it to "
                    "verify the proxy's signatures. List the signing key and any key still in "
                    "use elsewhere while keys are rotated.")
    p.add_argument("--key", action="append", required=True, metavar="FILE",
                   help="a key: the signing key's PEM (only its public half is printed), a "
                        "public PEM, or a JWK Set; repeat for several")
    p.add_argument("--card", metavar="FILE",
                   help="print the Signature Agent Card instead (to serve at "
                        "/.well-known/signature-agent-card): the fields FILE holds (a JSON "
                        "object: client_name, client_uri, contacts, purpose...), with the "
                        "keys, rfc9309-compliance and rate-control the proxy makes true")
    p.set_defaults(run=run_directory)
    p = commands.add_parser(
        "verify", help="check that audit logs are the ones the proxy wrote",
        description="Check each proxy's chain of records in the audit logs (oldest file first: "
                    "FILE.2 FILE.1 FILE) and, with --key, the signed checkpoints: prints each "
                    "line changed, removed, inserted or moved as FILE:LINE: what (a whole run "
                    "of a proxy taken out, or a checkpoint copied from another log, included), "
                    "then what it covered: files, lines, chains, runs, checkpoints, time span.",
        epilog="Exit status: 0 verified, 1 problems found (or nothing chained to verify), "
               "2 error.")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--key", action="append", default=[], metavar="FILE",
                   help="the proxy's public key: a PEM file (the signing key itself will do) "
                        "or a JWK Set such as keygen prints; repeat for several")
    p.set_defaults(run=run_verify)

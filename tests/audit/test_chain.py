"""The audit log's chain and signed checkpoints (robotsgate.audit.chain), and `verify`
(robotsgate.audit.verify): a log as written verifies; each kind of edit is named at its line."""

import io
import itertools
import json
import os
import stat
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from robotsgate.audit.chain import CHECKPOINT, GENESIS, Chain, digest
from robotsgate.audit.log import AuditLog
from robotsgate.audit.records import AuditRecord
from robotsgate.audit.verify import Report, verify
from robotsgate.outcomes import Reason
from robotsgate.report import summary as report
from robotsgate.signing import keys as signing_keys


def record(n: int) -> AuditRecord:
    return AuditRecord(ts=f"2026-11-27T12:00:{n % 60:02d}.000+00:00", event="block",
                       reason=Reason.DISALLOWED, status=403, agent="TrialBot",
                       user_agent="TrialBot/1.0", client="127.0.0.1:5000", method="GET",
                       url=f"http://a.example/private/{n}", robots_url="http://a.example/robots.txt",
                       robots_status=200, robots_fetched_at=None, robots_sha256=None,
                       group="*", rule="Disallow: /private", line=2, delay_ms=0, mode="enforce")


@pytest.fixture
def key(tmp_path: Path) -> signing_keys.SigningKey:
    return signing_keys.generate(str(tmp_path / "key.pem"))


def written(path: Path, count: int, key: signing_keys.SigningKey | None, *, every: int = 4,
            chain: Chain | None = None, **options: int) -> Chain:
    chain = chain or Chain("proxy-a")
    log = AuditLog(str(path), chain=chain, key=key, checkpoint_every=every,
                   clock=lambda: 1_800_000_000.0, **options)
    for n in range(count):
        log.write(record(n))
    log.close()
    return chain


def checked(key: signing_keys.SigningKey | None, *paths: Path) -> Report:
    streams = [(str(path), io.BytesIO(path.read_bytes())) for path in paths]
    return verify(streams, [key.public] if key else [])


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def said(result: Report) -> list[str]:
    return [str(problem) for problem in result.problems]


def test_each_record_names_the_line_before_it_and_checkpoints_are_signed(
        tmp_path: Path, key: signing_keys.SigningKey) -> None:
    log = tmp_path / "audit.jsonl"
    written(log, 10, key, every=4)
    lines = lines_of(log)
    parsed = [json.loads(line) for line in lines]
    # 4 records, a checkpoint, 4 records, a checkpoint, 2 records, the last one at close
    assert [p["event"] for p in parsed] == ["block"] * 4 + [CHECKPOINT] + ["block"] * 4 + \
        [CHECKPOINT] + ["block"] * 2 + [CHECKPOINT]
    assert [p["seq"] for p in parsed] == list(range(1, 14))
    assert parsed[0]["prev"] == GENESIS
    for before, line in zip(lines, parsed[1:], strict=False):
        assert line["prev"] == digest(before)
    assert {p["proxy"] for p in parsed} == {"proxy-a"}
    assert parsed[4]["keyid"] == key.public.keyid
    result = checked(key, log)
    assert result.ok and said(result) == [] and result.vouched == 13


def test_a_linked_line_is_the_record_with_its_chain_fields() -> None:
    chain = Chain("höst-1")  # a name JSON escapes nothing of, but that is not ASCII
    first = chain.record(record(1))
    chain.written(first)
    second = chain.record(record(2))
    assert second.line == replace(record(2), proxy="höst-1", seq=2,
                                  prev=digest(first.line)).to_line()
    assert json.loads(second.line)["prev"] == first.digest


def test_a_log_closed_twice_or_reopened_with_nothing_new_gets_no_empty_checkpoint(
        tmp_path: Path, key: signing_keys.SigningKey) -> None:
    log = tmp_path / "audit.jsonl"
    audit = AuditLog(str(log), chain=Chain("p"), key=key, checkpoint_every=100)
    audit.write(record(1))
    audit.reopen()
    audit.reopen()
    audit.close()
    assert [json.loads(line)["event"] for line in lines_of(log)] == ["block", CHECKPOINT]


def tampered(tmp_path: Path, key: signing_keys.SigningKey,
             edit: Callable[[list[bytes]], list[bytes]]) -> Report:
    log = tmp_path / "audit.jsonl"
    written(log, 10, key, every=4)
    log.write_bytes(b"".join(edit(lines_of(log))))
    return checked(key, log)


def test_one_changed_byte_is_named(tmp_path: Path, key: signing_keys.SigningKey) -> None:
    def edit(lines: list[bytes]) -> list[bytes]:
        lines[2] = lines[2].replace(b"/private/2", b"/private/3")
        return lines

    result = tampered(tmp_path, key, edit)
    assert not result.ok
    assert said(result) == [f"{tmp_path / 'audit.jsonl'}:3: changed: record 3 of proxy proxy-a "
                            f"is not the one the next names"]


def test_a_change_that_breaks_the_line_is_named_once(tmp_path: Path,
                                                     key: signing_keys.SigningKey) -> None:
    def edit(lines: list[bytes]) -> list[bytes]:
        lines[6] = lines[6][:40] + b"\n"
        return lines

    result = tampered(tmp_path, key, edit)
    assert said(result) == [f"{tmp_path / 'audit.jsonl'}:7: not a record: this line was changed"]


def test_a_removed_line_is_named(tmp_path: Path, key: signing_keys.SigningKey) -> None:
    result = tampered(tmp_path, key, lambda lines: lines[:5] + lines[6:])
    assert said(result) == [f"{tmp_path / 'audit.jsonl'}:6: removed: record 6 of proxy "
                            f"proxy-a, before this line"]


def test_an_inserted_line_is_named_even_with_its_hashes_right(
        tmp_path: Path, key: signing_keys.SigningKey) -> None:
    def edit(lines: list[bytes]) -> list[bytes]:
        # A forged record after line 2 that names line 2 and says it is the 3rd.
        forged = json.loads(lines[2])
        forged["url"] = "http://a.example/never-asked"
        forged["prev"] = digest(lines[1])
        return [*lines[:2], json.dumps(forged).encode() + b"\n", *lines[2:]]

    result = tampered(tmp_path, key, edit)
    assert said(result) == [f"{tmp_path / 'audit.jsonl'}:3: inserted: proxy proxy-a's chain "
                            f"does not lead through this line"]


def test_swapped_checkpoints_are_named(tmp_path: Path, key: signing_keys.SigningKey) -> None:
    def edit(lines: list[bytes]) -> list[bytes]:
        lines[4], lines[9] = lines[9], lines[4]  # the first two checkpoints trade places
        return lines

    result = tampered(tmp_path, key, edit)
    log = tmp_path / "audit.jsonl"
    assert said(result) == [f"{log}:5: moved: record 10 of proxy proxy-a is out of its place",
                            f"{log}:10: moved: record 5 of proxy proxy-a is out of its place"]


def test_a_forged_checkpoint_is_named(tmp_path: Path, key: signing_keys.SigningKey) -> None:
    def edit(lines: list[bytes]) -> list[bytes]:
        checkpoint = json.loads(lines[9])
        checkpoint["ts"] = "2030-01-01T00:00:00.000+00:00"
        lines[9] = json.dumps(checkpoint).encode() + b"\n"
        return lines

    result = tampered(tmp_path, key, edit)
    assert f"{tmp_path / 'audit.jsonl'}:10: checkpoint whose signature does not verify: this " \
           f"line was changed or forged" in said(result)


def test_a_file_cut_short_is_named(tmp_path: Path, key: signing_keys.SigningKey) -> None:
    log = tmp_path / "audit.jsonl"
    written(log, 10, key, every=4)
    data = log.read_bytes()
    log.write_bytes(data[:len(data) - 30])
    result = checked(key, log)
    assert said(result) == [f"{log}:13: not a whole record: the file was cut short here, or "
                            f"this line was changed"]
    assert any("after its last signed checkpoint" in note for note in result.notes)


def test_a_checkpoint_signed_with_another_key_vouches_for_nothing(
        tmp_path: Path, key: signing_keys.SigningKey) -> None:
    log = tmp_path / "audit.jsonl"
    written(log, 3, key)
    other = signing_keys.generate(str(tmp_path / "other.pem"))
    result = checked(other, log)
    assert said(result) == [f"{log}:1: proxy proxy-a: no checkpoint signed by a key given "
                            f"vouches for its 4 line(s)",
                            f"{log}:4: checkpoint signed with a key not given (keyid "
                            f"'{key.public.keyid}')"]
    assert result.vouched == 0


def test_a_forged_line_numbered_past_the_checkpoint_is_still_inserted(
        tmp_path: Path, key: signing_keys.SigningKey) -> None:
    def edit(lines: list[bytes]) -> list[bytes]:
        forged = {**json.loads(lines[0]), "url": "http://a.example/forged", "seq": 999999,
                  "prev": GENESIS}
        return [json.dumps(forged).encode() + b"\n", *lines[3:]]  # records 1 to 3 gone too

    result = tampered(tmp_path, key, edit)
    log = tmp_path / "audit.jsonl"
    assert f"{log}:1: inserted: proxy proxy-a's chain does not lead through this line" in \
        said(result)
    # The first records cut from the oldest file given leave no trace in it but this note.
    assert f"proxy proxy-a: its chain begins at record 4 ({log}:2): the records before it " \
           f"are in an older file" in result.notes


def test_with_a_key_a_chain_or_record_no_checkpoint_vouches_for_is_a_problem(
        tmp_path: Path, key: signing_keys.SigningKey) -> None:
    def edit(lines: list[bytes]) -> list[bytes]:
        fabricated = {**json.loads(lines[0]), "proxy": "host-deadbeef"}
        plain = {k: v for k, v in json.loads(lines[1]).items()
                 if k not in ("proxy", "seq", "prev")}
        return [*lines[:2], json.dumps(fabricated).encode() + b"\n",
                json.dumps(plain).encode() + b"\n", *lines[2:]]

    result = tampered(tmp_path, key, edit)
    log = tmp_path / "audit.jsonl"
    assert said(result) == [
        f"{log}:3: proxy host-deadbeef: no checkpoint signed by a key given vouches for its "
        f"1 line(s)",
        f"{log}:4: 1 record(s) in no chain, the first here: vouched for by nothing"]


@pytest.mark.parametrize("hostile", [
    b'{"ts":"x","event":"checkpoint","proxy":"proxy-a","seq":3,"prev":"","keyid":[],"sig":""}',
    b'{"ts":"\\ud800","event":"checkpoint","proxy":"proxy-a","seq":3,"prev":"","keyid":"K",'
    b'"sig":"AA"}',
    b"[" * 100_000,
    b'{"ts":"x","proxy":"proxy-a","seq":true,"prev":""}',
    b'\xff\xfe{"ts": 1}',
])
def test_hostile_lines_are_named_never_a_crash(tmp_path: Path, key: signing_keys.SigningKey,
                                               hostile: bytes) -> None:
    hostile = hostile.replace(b'"K"', f'"{key.public.keyid}"'.encode())
    result = tampered(tmp_path, key, lambda lines: [*lines[:2], hostile + b"\n", *lines[2:]])
    assert not result.ok
    assert any(problem.place and problem.place.line == 3 for problem in result.problems)


def test_a_checkpoint_with_anything_added_vouches_for_nothing(
        tmp_path: Path, key: signing_keys.SigningKey) -> None:
    def edit(lines: list[bytes]) -> list[bytes]:
        last = json.loads(lines[-1])
        lines[-1] = json.dumps({**last, "note": "added"}, separators=(",", ":")).encode() + \
            b"\n"
        return lines

    result = tampered(tmp_path, key, edit)
    assert f"{tmp_path / 'audit.jsonl'}:13: checkpoint whose signature does not verify: this " \
           f"line was changed or forged" in said(result)


def test_a_log_read_from_a_pipe_is_named_as_well(tmp_path: Path,
                                                 key: signing_keys.SigningKey) -> None:
    log = tmp_path / "audit.jsonl"
    written(log, 10, key, every=4)
    lines = lines_of(log)
    read, write = os.pipe()
    os.write(write, b"".join(lines[:5] + lines[6:]))
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        result = verify([("pipe", pipe)], [key.public])
    assert said(result) == ["pipe:6: removed: record 6 of proxy proxy-a, before this line"]


def test_without_a_key_the_chain_still_shows_a_naive_edit(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    written(log, 5, None)
    assert CHECKPOINT.encode() not in log.read_bytes()  # nothing signs without a key
    assert checked(None, log).ok
    lines = lines_of(log)
    lines[1] = lines[1].replace(b"/private/1", b"/public/1")
    log.write_bytes(b"".join(lines))
    assert said(checked(None, log)) == [f"{log}:2: changed: record 2 of proxy proxy-a is not "
                                        f"the one the next ({log}:3) names"]


def test_the_chain_goes_on_across_rotation(tmp_path: Path, key: signing_keys.SigningKey) -> None:
    log = tmp_path / "audit.jsonl"
    written(log, 30, key, every=1000, max_bytes=3000, keep=20)
    rotated = [p for p in tmp_path.glob("audit.jsonl.*") if p.suffix[1:].isdigit()]
    files = [*sorted(rotated, key=lambda p: -int(p.suffix[1:])), log]  # oldest first
    assert len(files) >= 4
    assert all(f.stat().st_size <= 3000 for f in files)  # its closing checkpoint included
    for older, newer in itertools.pairwise(files):
        last = lines_of(older)[-1]
        assert json.loads(last)["event"] == CHECKPOINT  # each file ends with its checkpoint
        assert json.loads(lines_of(newer)[0])["prev"] == digest(last)
    result = checked(key, *files)
    assert result.ok, said(result)
    # The newest file alone: its chain begins in an older one, which verify says.
    alone = checked(key, log)
    assert alone.ok and any("begins at record" in note for note in alone.notes)


def test_two_proxies_writing_one_file_keep_a_chain_each(tmp_path: Path,
                                                        key: signing_keys.SigningKey) -> None:
    log = tmp_path / "audit.jsonl"
    a = AuditLog(str(log), chain=Chain("a"), key=key, checkpoint_every=3)
    b = AuditLog(str(log), chain=Chain("b"), key=key, checkpoint_every=3)
    for n in range(7):
        (a if n % 2 else b).write(record(n))
        b.write(record(n + 100))
    a.close()
    b.close()
    assert {json.loads(line)["proxy"] for line in lines_of(log)} == {"a", "b"}
    assert checked(key, log).ok
    lines = lines_of(log)
    removed = next(i for i, line in enumerate(lines) if json.loads(line)["proxy"] == "a" and
                   json.loads(line)["seq"] == 2)
    log.write_bytes(b"".join(lines[:removed] + lines[removed + 1:]))
    assert [problem.what for problem in checked(key, log).problems] == \
        ["removed: record 2 of proxy a, before this line"]


def test_an_unchained_log_reads_in_report_but_does_not_verify(tmp_path: Path) -> None:
    log = tmp_path / "old.jsonl"
    plain = AuditLog(str(log))
    plain.write(record(1))
    plain.close()
    result = checked(None, log)
    assert not result.ok and result.unchained == 1
    assert "no chained records: nothing here can be verified" in result.notes
    with log.open("rb") as stream:
        assert report.read([("old.jsonl", stream)]).blocks == 1


def test_report_counts_records_not_checkpoints(tmp_path: Path,
                                               key: signing_keys.SigningKey) -> None:
    log = tmp_path / "audit.jsonl"
    written(log, 5, key, every=2)
    with log.open("rb") as stream:
        summary = report.read([("audit.jsonl", stream)])
    assert summary.records == 5 and summary.blocks == 5 and summary.skipped == 0


def test_the_key_id_is_the_rfc7638_thumbprint() -> None:
    # RFC 8037 Appendix A.2 and A.3: the example Ed25519 public key and its thumbprint.
    public = signing_keys.PublicKey(
        signing_keys._unb64url("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"))
    assert public.keyid == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"


def test_a_key_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "key.pem"
    signing_keys.generate(str(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    os.chmod(path, 0o644)
    with pytest.raises(ValueError, match="may be read by others"):
        signing_keys.load(str(path))


def test_a_key_that_is_not_ed25519_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ec.pem"
    path.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    os.chmod(path, 0o600)
    with pytest.raises(ValueError, match="is not an Ed25519 key"):
        signing_keys.load(str(path))


def test_public_keys_read_from_a_pem_or_a_key_set(tmp_path: Path,
                                                  key: signing_keys.SigningKey) -> None:
    jwks = tmp_path / "keys.json"
    jwks.write_text(json.dumps({"keys": [key.public.jwk()]}))
    assert signing_keys.public_keys(key.path) == [key.public]
    assert signing_keys.public_keys(str(jwks)) == [key.public]
    jwks.write_text(json.dumps({"keys": [{"kty": "RSA", "n": "x", "e": "AQAB"}]}))
    with pytest.raises(ValueError, match="holds no Ed25519 key"):
        signing_keys.public_keys(str(jwks))


# -- runs: a proxy that starts again goes on with its chain -----------------------------------

def run(path: Path, count: int, key: signing_keys.SigningKey | None, *, first: int = 0,
        proxy: str = "host-new", every: int = 100) -> Chain:
    """One run of a proxy: its own chain (resumable), `count` records, stopped as the proxy
    stops (the last checkpoint, the chain let go)."""
    chain = Chain(proxy, resumable=True)
    log = AuditLog(str(path), chain=chain, key=key, checkpoint_every=every,
                   clock=lambda: 1_800_000_000.0)
    for n in range(first, first + count):
        log.write(record(n))
    log.close()
    chain.release()
    return chain


def test_a_second_run_goes_on_with_the_chain_of_the_first(tmp_path: Path,
                                                          key: signing_keys.SigningKey) -> None:
    log = tmp_path / "audit.jsonl"
    one = run(log, 3, key, proxy="host-aaaa")
    two = run(log, 2, key, first=3, proxy="host-bbbb")
    assert one.proxy == two.proxy == "host-aaaa"  # the same chain, taken up again
    parsed = [json.loads(line) for line in lines_of(log)]
    assert [(p["event"], p["seq"], p.get("start")) for p in parsed] == [
        ("block", 1, "new"), ("block", 2, None), ("block", 3, None), (CHECKPOINT, 4, None),
        ("block", 5, "same-file"), ("block", 6, None), (CHECKPOINT, 7, None)]
    assert parsed[4]["prev"] == digest(lines_of(log)[3])
    # Only the chain's state beside it, hidden from FILE* patterns.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".audit.jsonl.host-aaaa.chain", "audit.jsonl", "key.pem"]
    result = checked(key, log)
    assert result.ok and said(result) == [] and result.vouched == 7
    assert (result.chains, result.runs, result.checkpoints, result.signed) == (1, 2, 2, 2)
    assert result.covered() == (
        f"1 file(s) ({log}), 7 line(s), from 2026-11-27T12:00:00.000+00:00 to "
        f"2027-01-15T08:00:00.000+00:00: 1 chain(s), 2 run(s), 2 checkpoint(s) (2 verified)")


def test_a_whole_run_taken_out_is_named_at_the_line_that_follows_it(
        tmp_path: Path, key: signing_keys.SigningKey) -> None:
    log = tmp_path / "audit.jsonl"
    run(log, 3, key)
    run(log, 2, key, first=3)
    log.write_bytes(b"".join(lines_of(log)[4:]))  # every line of the first run, its checkpoint too
    result = checked(key, log)
    assert not result.ok
    assert said(result) == [f"{log}:1: removed: records 1 to 4 of proxy host-new, before this "
                            f"line: this run of it began after record 4 in this file (a whole "
                            f"run, or more, was taken out)"]
    # The same without a key: the chain alone shows it.
    assert said(checked(None, log)) == said(result)


def test_a_run_taken_out_between_two_others_is_named(tmp_path: Path,
                                                     key: signing_keys.SigningKey) -> None:
    log = tmp_path / "audit.jsonl"
    for n in range(3):
        run(log, 2, key, first=2 * n)
    lines = lines_of(log)
    log.write_bytes(b"".join(lines[:3] + lines[6:]))  # the second run: 2 records, 1 checkpoint
    assert said(checked(key, log)) == [
        f"{log}:4: removed: record(s) 4 to 6 of proxy host-new, before this line"]


def test_a_checkpoint_copied_from_another_log_is_named(tmp_path: Path,
                                                       key: signing_keys.SigningKey) -> None:
    log, other = tmp_path / "audit.jsonl", tmp_path / "other" / "audit.jsonl"
    other.parent.mkdir()
    run(log, 3, key)
    run(other, 5, key, proxy="elsewhere-1")
    pasted = lines_of(other)[-1]  # a genuine checkpoint, signed by the same key
    assert json.loads(pasted)["event"] == CHECKPOINT
    lines = lines_of(log)
    log.write_bytes(b"".join([*lines[:2], pasted, *lines[2:]]))
    result = checked(key, log)
    assert said(result) == [f"{log}:3: removed: record 5 of proxy elsewhere-1, which this "
                            f"checkpoint follows in its own file: the lines before it were "
                            f"removed, or it was copied from another log"]
    # A checkpoint of the same chain from an earlier run, pasted later: inserted.
    log = tmp_path / "again" / "audit.jsonl"
    log.parent.mkdir()
    run(log, 3, key)
    run(log, 2, key, first=3)
    lines = lines_of(log)
    log.write_bytes(b"".join([*lines, lines[3]]))
    problems = said(checked(key, log))
    assert f"{log}:8: inserted: record 4 of proxy host-new again, after {log}:7" in problems


def test_two_proxies_on_one_file_keep_their_own_chains_across_restarts(
        tmp_path: Path, key: signing_keys.SigningKey) -> None:
    log = tmp_path / "audit.jsonl"
    a, b = Chain("host-a", resumable=True), Chain("host-b", resumable=True)
    logs = [AuditLog(str(log), chain=chain, key=key, checkpoint_every=2) for chain in (a, b)]
    for n in range(6):
        logs[n % 2].write(record(n))
    for audit, chain in zip(logs, (a, b), strict=True):
        audit.close()
        chain.release()
    again = [Chain("host-c", resumable=True), Chain("host-d", resumable=True)]
    logs = [AuditLog(str(log), chain=chain, key=key, checkpoint_every=2) for chain in again]
    for n in range(6, 10):
        logs[n % 2].write(record(n))
    for audit in logs:
        audit.close()
    assert {chain.proxy for chain in again} == {"host-a", "host-b"}
    result = checked(key, log)
    assert result.ok and said(result) == [], said(result)
    assert (result.chains, result.runs) == (2, 4)


def test_a_last_line_cut_short_gets_its_newline_and_is_named(
        tmp_path: Path, key: signing_keys.SigningKey, caplog: pytest.LogCaptureFixture) -> None:
    log = tmp_path / "audit.jsonl"
    run(log, 3, key)
    with log.open("ab") as cut:
        cut.write(b'{"ts":"2026-11-27T12:00:09.000+00:00","event":"bl')  # a machine stopped
    run(log, 2, key, first=3)
    lines = lines_of(log)
    assert lines[4] == b'{"ts":"2026-11-27T12:00:09.000+00:00","event":"bl\n'
    assert json.loads(lines[5])["start"] == "same-file"
    assert "ended inside a line" in caplog.text
    assert said(checked(key, log)) == [f"{log}:5: not a record: this line was changed"]


def test_after_the_log_was_deleted_the_chain_goes_on_and_says_so(
        tmp_path: Path, key: signing_keys.SigningKey, caplog: pytest.LogCaptureFixture) -> None:
    log = tmp_path / "audit.jsonl"
    run(log, 3, key)
    log.unlink()  # the operator's
    run(log, 2, key, first=3)
    parsed = [json.loads(line) for line in lines_of(log)]
    assert (parsed[0]["seq"], parsed[0]["start"]) == (5, "other-file")
    assert "is not in" in caplog.text and "deleted" in caplog.text
    result = checked(key, log)
    assert result.ok, said(result)
    assert any("begins at record 5" in note for note in result.notes)


def test_lines_cut_from_the_end_while_it_was_stopped_are_named(
        tmp_path: Path, key: signing_keys.SigningKey) -> None:
    log = tmp_path / "audit.jsonl"
    run(log, 4, key)
    log.write_bytes(b"".join(lines_of(log)[:2]))  # records 3, 4 and the checkpoint gone
    run(log, 2, key, first=4)
    assert json.loads(lines_of(log)[2])["start"] == "other-file"
    assert said(checked(key, log)) == [
        f"{log}:3: removed: record(s) 3 to 5 of proxy host-new, before this line"]


def test_after_a_rotation_while_stopped_the_chain_goes_on_in_the_new_file(
        tmp_path: Path, key: signing_keys.SigningKey, caplog: pytest.LogCaptureFixture) -> None:
    log = tmp_path / "audit.jsonl"
    run(log, 3, key)
    log.rename(tmp_path / "audit.jsonl.1")
    with caplog.at_level("INFO"):
        run(log, 2, key, first=3)
    assert "rotated to" in caplog.text
    assert json.loads(lines_of(log)[0])["start"] == "other-file"
    both = checked(key, tmp_path / "audit.jsonl.1", log)
    assert both.ok and said(both) == [] and (both.runs, both.chains) == (2, 1)
    alone = checked(key, log)
    assert alone.ok and any("begins at record 5" in note for note in alone.notes)


def test_a_state_that_is_not_one_is_left_alone_and_a_new_chain_begun(
        tmp_path: Path, key: signing_keys.SigningKey, caplog: pytest.LogCaptureFixture) -> None:
    log = tmp_path / "audit.jsonl"
    run(log, 2, key, proxy="host-old")
    state = tmp_path / ".audit.jsonl.host-old.chain"
    state.write_bytes(b"garbage")
    chain = run(log, 1, key, proxy="host-fresh")
    assert chain.proxy == "host-fresh" and state.read_bytes() == b"garbage"
    assert "is not a chain's state" in caplog.text


def test_no_state_is_kept_beside_a_log_that_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens for writing once read
    try:
        chain = Chain("host-pipe", resumable=True)
        log = AuditLog(str(fifo), chain=chain)
        log.write(record(1))
        log.close()
        assert json.loads(os.read(reader, 65536))["start"] == "new"
    finally:
        os.close(reader)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]
    assert not chain.claimed

"""The key directory and the Signature Agent Card (robotsgate.signing.directory), and how the
options that publish them are read (robotsgate.config.assemble.published)."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from robotsgate.config import assemble
from robotsgate.config.options import Settings
from robotsgate.signing import keys as signing_keys
from robotsgate.signing.directory import COMPLIANCE, card


def test_the_card_says_what_the_proxy_makes_true_over_what_the_operator_wrote(
        tmp_path: Path) -> None:
    key = signing_keys.generate(str(tmp_path / "k.pem"))
    made = card({"client_name": "ShopBot", "rate-control": "none", "keys": [],
                 "purpose": "search"}, [key.public])
    assert made["client_name"] == "ShopBot" and made["purpose"] == "search"
    assert made["rate-control"] == "429"
    assert made["rfc9309-compliance"] == list(COMPLIANCE)
    assert made["keys"] == [{**key.public.jwk(), "use": "sig"}]


def test_published_lists_the_signing_key_first_and_signs_with_every_private_key(
        tmp_path: Path) -> None:
    key = signing_keys.generate(str(tmp_path / "k.pem"))
    old = signing_keys.generate(str(tmp_path / "old.pem"))
    listed = tmp_path / "listed.jwks"
    listed.write_text(json.dumps({"keys": [signing_keys.generate(str(tmp_path / "l.pem"))
                                           .public.jwk()]}))
    settings = replace(Settings(), signing_key=key.path, directory_port=8443,
                       directory_keys=(old.path, str(listed), old.path))
    published = assemble.published(settings, assemble.signing_key(settings))
    assert published is not None
    assert [k.keyid for k in published.keys][:2] == [key.public.keyid, old.public.keyid]
    assert len(published.keys) == 3 and len(published.signers) == 2
    fields = dict(published.signature_fields("bots.example", 1000))
    assert fields["Signature-Input"].startswith(
        'sig1=("@authority";req);created=1000;expires=1300;keyid="' + key.public.keyid)
    assert ', sig2=("@authority";req)' in fields["Signature-Input"]
    assert assemble.published(replace(settings, directory_port=0), key) is None


@pytest.mark.parametrize(("changes", "message"), [
    ({"signing_key": ""}, "robots_directory_port: the directory publishes robots_signing_key"),
    ({"directory_keys": ("/nonexistent.pem",)}, "robots_directory_keys: cannot read"),
    ({"signature_card": "/nonexistent.json"}, "robots_signature_card: cannot read"),
    ({"signature_card": "LIST"}, "robots_signature_card: "),
])
def test_what_cannot_be_published_is_refused_naming_its_option(
        tmp_path: Path, changes: dict[str, object], message: str) -> None:
    key = signing_keys.generate(str(tmp_path / "k.pem"))
    (tmp_path / "list.json").write_text("[1, 2]")
    if changes.get("signature_card") == "LIST":
        changes = {"signature_card": str(tmp_path / "list.json")}
    settings = replace(Settings(), **{"signing_key": key.path, "directory_port": 8443,
                                      **changes})
    with pytest.raises(ValueError, match="^" + message):
        assemble.published(settings, assemble.signing_key(settings))

"""`Credentials`: storage options by location, looked up for a location or one under it, never
shown, and carried into a spawned process."""

from __future__ import annotations

import pickle

import pytest

from trainforge.config import Credentials, load_spec

A = {"key": "a-key", "secret": "a-secret", "client_kwargs": {"endpoint_url": "http://a:9000"}}
B = {"key": "b-key", "secret": "b-secret"}


def test_a_location_takes_its_own_entry_else_the_longest_one_it_lies_under() -> None:
    credentials = Credentials({"s3://bucket": A, "s3://bucket/ckpt": B})
    assert credentials.options_for("s3://bucket") == A
    assert credentials.options_for("s3://bucket/ckpt/run-1/step-10") == B
    assert credentials.options_for("s3://bucket/data/part-0.parquet") == A
    assert credentials.options_for("s3://bucket/ckpt-old/run-1") == A  # not under s3://bucket/ckpt
    assert credentials.options_for("s3://other/data") is None
    assert credentials.options_for("s3://bucketful/data") is None


def test_a_lookup_hands_out_a_copy() -> None:
    credentials = Credentials({"s3://bucket": A})
    credentials.options_for("s3://bucket")["client_kwargs"] = {}  # type: ignore[index]
    assert credentials.options_for("s3://bucket") == A


def test_providers_are_combined_into_new_ones() -> None:
    base = Credentials({"s3://bucket": A})
    given = base.merged(Credentials({"s3://bucket": B}))
    assert given.options_for("s3://bucket") == B and base.options_for("s3://bucket") == A
    merged = base.merged(Credentials({"s3://other": B}))
    assert merged.locations() == ["s3://bucket", "s3://other"]


def test_the_options_are_never_shown_and_survive_a_pickle() -> None:
    credentials = Credentials({"s3://bucket": A})
    assert repr(credentials) == "Credentials(locations=['s3://bucket'])"
    assert "a-secret" not in repr(credentials) and "a-secret" not in str(credentials)
    assert pickle.loads(pickle.dumps(credentials)).options_for("s3://bucket/x") == A


def test_a_spec_gives_its_data_sources_and_checkpoint_locations_options(tmp_path) -> None:
    spec_path = tmp_path / "pipeline.yaml"
    spec_path.write_text(
        "name: p\n"
        "data:\n"
        "  source: s3://data/rows/*.parquet\n"
        "  target: y\n"
        "  storage_options: {key: a-key, secret: a-secret}\n"
        "features: {include: remaining}\n"
        "model: {type: mlp, task: binary}\n"
        "training:\n"
        "  checkpoint:\n"
        "    location: s3://ckpt/team\n"
        "    storage_options: {key: b-key, secret: b-secret}\n")
    credentials = load_spec(spec_path).credentials()
    assert credentials.options_for("s3://data/rows/*.parquet") == {"key": "a-key",
                                                                    "secret": "a-secret"}
    assert credentials.options_for("s3://ckpt/team/run-1/step-0000000010") == B
    assert credentials.options_for("s3://data/other.parquet") is None
    spec_path.write_text(spec_path.read_text().replace(
        "  storage_options: {key: a-key, secret: a-secret}\n", ""))
    assert load_spec(spec_path).credentials().locations() == ["s3://ckpt/team"]


def test_a_credentials_file_gives_options_by_location(tmp_path) -> None:
    path = tmp_path / "credentials.yaml"
    path.write_text("locations:\n  s3://team:\n    key: a-key\n    secret: a-secret\n")
    assert Credentials.from_file(path).options_for("s3://team/ckpt/run") == {
        "key": "a-key", "secret": "a-secret"}


def test_a_bad_credentials_file_is_refused_naming_it_and_the_entry(tmp_path) -> None:
    from trainforge.errors import SpecError

    path = tmp_path / "credentials.yaml"
    for text, problem in (
            ("s3://team: {key: k}\n", "expected a mapping with `locations:`"),
            ("locations: [s3://team]\n", "expected a mapping with `locations:`"),
            ("locations:\n  s3://team: k\n", "locations.s3://team: expected a mapping of "
                                             "storage options"),
            ("locations: {a: [}\n", "malformed YAML"),
            ("- s3://team\n", "expected a mapping of keys at the top level")):
        path.write_text(text)
        with pytest.raises(SpecError) as refused:
            Credentials.from_file(path)
        assert str(path) in str(refused.value) and problem in str(refused.value), text
    with pytest.raises(SpecError, match="missing.yaml: file not found"):
        Credentials.from_file(tmp_path / "missing.yaml")


PROFILED = """
locations:
  s3://team: {key: a-key, secret: a-secret}
  s3://shared: {key: s-key, secret: s-secret}
profiles:
  prod:
    locations:
      s3://team: {key: p-key, secret: p-secret}
  empty: {locations: {}}
"""


def test_a_named_profile_puts_its_locations_over_the_files_others(tmp_path) -> None:
    path = tmp_path / "credentials.yaml"
    path.write_text(PROFILED)
    prod = Credentials.from_file(path, "prod")
    assert prod.options_for("s3://team/ckpt") == {"key": "p-key", "secret": "p-secret"}
    assert prod.options_for("s3://shared/data") == {"key": "s-key", "secret": "s-secret"}
    assert Credentials.from_file(path).options_for("s3://team/ckpt")["key"] == "a-key"
    assert Credentials.from_file(path, "empty").options_for("s3://team")["key"] == "a-key"


def test_a_profile_the_file_lacks_or_a_malformed_one_is_refused(tmp_path) -> None:
    from trainforge.errors import SpecError

    path = tmp_path / "credentials.yaml"
    path.write_text(PROFILED)
    with pytest.raises(SpecError) as refused:
        Credentials.from_file(path, "staging")
    assert str(refused.value) == (f"{path}: has no profile 'staging' (TRAINFORGE_PROFILE); "
                                  "its profiles: ['empty', 'prod']")
    for text, problem in (
            ("profiles: [prod]\n", "profiles: expected a mapping of name -> locations"),
            ("profiles:\n  prod: {s3://team: {key: k}}\n",
             "profiles.prod: expected a mapping with `locations:` and nothing else"),
            ("profiles:\n  prod: {locations: {s3://team: k}}\n",
             "profiles.prod.locations.s3://team: expected a mapping of storage options")):
        path.write_text(text)
        with pytest.raises(SpecError) as refused:
            Credentials.from_file(path, "prod")
        assert f"{path}: {problem}" in str(refused.value), text


def test_a_session_opens_with_the_profile_the_environment_names(tmp_path) -> None:
    from trainforge.config import Settings
    from trainforge.errors import SpecError
    from trainforge.session import Session

    path = tmp_path / "credentials.yaml"
    path.write_text(PROFILED)
    env = {"TRAINFORGE_HOME": str(tmp_path / "home"), "TRAINFORGE_CREDENTIALS": str(path),
           "TRAINFORGE_PROFILE": "prod", "TRAINFORGE_USER": "alice"}
    session = Session.open(Settings.from_env(env))
    assert session.credentials.options_for("s3://team")["key"] == "p-key"
    assert session.user == "alice"
    del env["TRAINFORGE_CREDENTIALS"]
    with pytest.raises(SpecError, match="TRAINFORGE_PROFILE=prod names a profile of the "
                                        "credentials file, and TRAINFORGE_CREDENTIALS names "
                                        "none"):
        Session.open(Settings.from_env(env))

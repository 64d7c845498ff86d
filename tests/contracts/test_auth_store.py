"""`AuthStore`: users and their API tokens, each rule of the protocol's docstring on every
backend: unique names and token ids, tokens only of existing users, listings in pages, a
revocation that keeps its first time, and UTC datetimes."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest
from contract_helpers import pages

from trainforge.entities import ApiToken, Role
from trainforge.errors import Conflict, NotFound
from trainforge.storage import AuthStore, Page, Store

HASH = "ab" * 32  # a SHA-256 in hex
MONDAY = datetime(2026, 12, 7, 9, 30, 15, 123456, tzinfo=timezone.utc)
CET = timezone(timedelta(hours=1))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    """The SQL backends only: users and tokens never travel to a client (`storage.wire`)."""
    return str(request.param)


@pytest.fixture
def auth(store: Store) -> AuthStore:
    return store


@pytest.fixture
def ann(auth: AuthStore) -> str:
    return auth.add_user("ann", Role.ADMIN).name


def _token(auth: AuthStore, token_id: str, user: str = "ann", role: Role = Role.VIEWER,
           expires_at: datetime | None = None) -> ApiToken:
    return auth.add_token(token_id, user, role, HASH, f"token {token_id}", expires_at)


def _is_utc(value: datetime | None) -> bool:
    return value is not None and value.tzinfo is not None and value.utcoffset() == timedelta(0)


# users


@pytest.mark.parametrize("role", list(Role))
def test_a_user_reads_back_as_added(auth: AuthStore, role: Role) -> None:
    before = datetime.now(timezone.utc)
    user = auth.add_user("ci-bot", role)
    assert (user.name, user.role) == ("ci-bot", role)
    assert _is_utc(user.created_at) and before <= user.created_at <= datetime.now(timezone.utc)
    assert auth.get_user("ci-bot") == user


def test_a_taken_user_name_raises_conflict_naming_it(auth: AuthStore, ann: str) -> None:
    first = auth.get_user(ann)
    with pytest.raises(Conflict) as raised:
        auth.add_user(ann, Role.VIEWER)
    assert str(raised.value) == "user 'ann' already exists"
    assert auth.get_user(ann) == first
    assert auth.list_users().items == (first,)


def test_racing_additions_of_one_user_name_store_it_once(auth: AuthStore) -> None:
    def add(role: Role) -> str:
        try:
            return auth.add_user("racer", role).role.value
        except Conflict as exc:
            return str(exc)

    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(add, [Role.VIEWER, Role.EDITOR, Role.ADMIN, Role.VIEWER]))
    conflicts = [outcome for outcome in outcomes if outcome == "user 'racer' already exists"]
    assert len(conflicts) == 3
    [winner] = set(outcomes) - set(conflicts)
    assert auth.get_user("racer").role.value == winner


def test_an_unknown_user_raises_not_found_naming_it(auth: AuthStore) -> None:
    with pytest.raises(NotFound) as raised:
        auth.get_user("nobody")
    assert str(raised.value) == "user 'nobody' not found"


def test_a_users_role_changes_and_an_unknown_user_is_named(auth: AuthStore, ann: str) -> None:
    changed = auth.set_user_role(ann, Role.VIEWER)

    assert changed.role is Role.VIEWER and auth.get_user(ann).role is Role.VIEWER
    assert changed.created_at == auth.get_user(ann).created_at
    with pytest.raises(NotFound, match="user 'bob' not found"):
        auth.set_user_role("bob", Role.EDITOR)


def test_users_come_in_pages_by_name(auth: AuthStore) -> None:
    for name in ["eve", "bob", "ann", "dan", "cat"]:
        auth.add_user(name, Role.VIEWER)
    walked = pages(lambda cursor: auth.list_users(limit=2, cursor=cursor))
    assert [[user.name for user in page.items] for page in walked] == [
        ["ann", "bob"], ["cat", "dan"], ["eve"]]
    assert auth.list_users(limit=5).next_cursor is None


def test_no_users_is_one_empty_page(auth: AuthStore) -> None:
    page = auth.list_users()
    assert (page.items, page.next_cursor) == ((), None)


# tokens


def test_a_token_reads_back_as_added(auth: AuthStore, ann: str) -> None:
    before = datetime.now(timezone.utc)
    token = auth.add_token("tf_1a2b", ann, Role.EDITOR, HASH, "the CI runner", MONDAY)
    assert (token.token_id, token.user, token.role, token.secret_hash, token.description) == (
        "tf_1a2b", "ann", Role.EDITOR, HASH, "the CI runner")
    assert (token.expires_at, token.revoked_at, token.last_used_at) == (MONDAY, None, None)
    assert _is_utc(token.created_at) and before <= token.created_at <= datetime.now(timezone.utc)
    assert auth.get_token("tf_1a2b") == token


@pytest.mark.parametrize("expires_at", [
    None, MONDAY, datetime(2027, 3, 28, 1, 59, 59, 999999, tzinfo=CET),
])
def test_expires_at_reads_back_as_the_same_instant_in_utc(
    auth: AuthStore, ann: str, expires_at: datetime | None
) -> None:
    added = _token(auth, "t1", expires_at=expires_at)
    stored = auth.get_token("t1").expires_at
    assert stored == added.expires_at == expires_at
    assert stored is None or _is_utc(stored)


def test_the_store_does_not_judge_a_tokens_role_against_its_users(auth: AuthStore) -> None:
    auth.add_user("val", Role.VIEWER)
    assert _token(auth, "t1", "val", Role.ADMIN).role is Role.ADMIN
    assert auth.get_token("t1").role is Role.ADMIN


def test_a_token_of_a_missing_user_raises_not_found_naming_the_user(auth: AuthStore) -> None:
    with pytest.raises(NotFound) as raised:
        _token(auth, "t1", "ghost")
    assert str(raised.value) == "user 'ghost' not found"
    assert auth.list_tokens().items == ()


def test_a_taken_token_id_raises_conflict_naming_it(auth: AuthStore, ann: str) -> None:
    first = _token(auth, "t1")
    auth.add_user("bob", Role.ADMIN)
    with pytest.raises(Conflict) as raised:
        auth.add_token("t1", "bob", Role.ADMIN, "cd" * 32, "another", None)
    assert str(raised.value) == "token 't1' already exists"
    assert auth.get_token("t1") == first
    assert auth.list_tokens().items == (first,)


@pytest.mark.parametrize("call", ["get_token", "revoke_token", "touch_token"])
def test_an_unknown_token_id_raises_not_found_naming_it(
    auth: AuthStore, ann: str, call: str
) -> None:
    _token(auth, "t1")
    arguments = () if call == "get_token" else (MONDAY,)
    with pytest.raises(NotFound) as raised:
        getattr(auth, call)("tf_nope", *arguments)
    assert str(raised.value) == "token 'tf_nope' not found"


def test_revoking_sets_revoked_at_and_returns_the_token(auth: AuthStore, ann: str) -> None:
    added = _token(auth, "t1")
    revoked = auth.revoke_token("t1", MONDAY.astimezone(CET))
    assert revoked.revoked_at == MONDAY and _is_utc(revoked.revoked_at)
    assert revoked == auth.get_token("t1")
    assert (revoked.token_id, revoked.created_at, revoked.last_used_at) == (
        "t1", added.created_at, None)


def test_revoking_twice_keeps_the_first_time(auth: AuthStore, ann: str) -> None:
    _token(auth, "t1")
    auth.revoke_token("t1", MONDAY)
    again = auth.revoke_token("t1", MONDAY + timedelta(days=1))
    assert again.revoked_at == MONDAY
    assert auth.get_token("t1").revoked_at == MONDAY
    earlier = auth.revoke_token("t1", MONDAY - timedelta(days=1))
    assert earlier.revoked_at == MONDAY


def test_revoking_one_token_leaves_the_others(auth: AuthStore, ann: str) -> None:
    _token(auth, "t1")
    other = _token(auth, "t2")
    auth.revoke_token("t1", MONDAY)
    assert auth.get_token("t2") == other


def test_touching_sets_last_used_at(auth: AuthStore, ann: str) -> None:
    added = _token(auth, "t1")
    assert auth.touch_token("t1", MONDAY) is None  # type: ignore[func-returns-value]
    touched = auth.get_token("t1")
    assert touched.last_used_at == MONDAY and _is_utc(touched.last_used_at)
    assert touched == ApiToken(**{**added.__dict__, "last_used_at": MONDAY})
    later = (MONDAY + timedelta(minutes=5)).astimezone(CET)
    auth.touch_token("t1", later)
    assert auth.get_token("t1").last_used_at == later


def test_a_revoked_token_is_still_touched_and_listed(auth: AuthStore, ann: str) -> None:
    _token(auth, "t1")
    auth.revoke_token("t1", MONDAY)
    auth.touch_token("t1", MONDAY + timedelta(seconds=1))
    [token] = auth.list_tokens().items
    assert (token.revoked_at, token.last_used_at) == (MONDAY, MONDAY + timedelta(seconds=1))


def test_tokens_are_listed_oldest_first_of_every_user_or_one(auth: AuthStore, ann: str) -> None:
    auth.add_user("bob", Role.EDITOR)
    # ids sort against creation order: the listing follows creation, not the id
    for number, user in zip(range(6, 0, -1), ["ann", "bob", "ann", "ann", "bob", "ann"]):
        _token(auth, f"t{number}", user)
    assert [t.token_id for t in auth.list_tokens().items] == ["t6", "t5", "t4", "t3", "t2", "t1"]
    assert [t.token_id for t in auth.list_tokens("ann").items] == ["t6", "t4", "t3", "t1"]
    assert [t.token_id for t in auth.list_tokens(user="bob").items] == ["t5", "t2"]
    assert auth.list_tokens("nobody").items == ()


def test_paging_through_tokens_returns_each_once_in_order(auth: AuthStore, ann: str) -> None:
    auth.add_user("bob", Role.EDITOR)
    for number in range(7, 0, -1):
        _token(auth, f"t{number}", "ann" if number % 3 else "bob")
    whole = [t.token_id for t in auth.list_tokens(limit=100).items]
    assert whole == ["t7", "t6", "t5", "t4", "t3", "t2", "t1"]
    for limit in [1, 2, 3, 6, 7]:
        def page(cursor: str | None, limit: int = limit) -> Page[ApiToken]:
            return auth.list_tokens(limit=limit, cursor=cursor)

        walked = pages(page)
        assert [len(page.items) for page in walked[:-1]] == [limit] * (len(walked) - 1)
        assert [t.token_id for page in walked for t in page.items] == whole
    of_ann = pages(lambda cursor: auth.list_tokens("ann", limit=2, cursor=cursor))
    assert [[t.token_id for t in page.items] for page in of_ann] == [
        ["t7", "t5"], ["t4", "t2"], ["t1"]]


def test_a_token_added_while_paging_shows_up_once_at_the_end(auth: AuthStore, ann: str) -> None:
    for number in range(4):
        _token(auth, f"t{number}")
    first = auth.list_tokens(limit=2)
    _token(auth, "t_late")
    rest = pages(lambda cursor: auth.list_tokens(limit=2, cursor=cursor or first.next_cursor))
    assert [t.token_id for page in [first, *rest] for t in page.items] == [
        "t0", "t1", "t2", "t3", "t_late"]


# pages and cursors


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_below_one_is_refused(auth: AuthStore, limit: int) -> None:
    message = f"limit must be an integer >= 1, got {limit}"
    with pytest.raises(ValueError, match=message):
        auth.list_users(limit=limit)
    with pytest.raises(ValueError, match=message):
        auth.list_tokens(limit=limit)


@pytest.mark.parametrize("cursor", ["not a cursor", "e30", ""])
def test_a_malformed_cursor_is_refused_naming_it(auth: AuthStore, cursor: str) -> None:
    with pytest.raises(ValueError, match=f"cursor {cursor!r}"):
        auth.list_users(cursor=cursor)
    with pytest.raises(ValueError, match=f"cursor {cursor!r}"):
        auth.list_tokens(cursor=cursor)


def test_a_cursor_is_valid_only_for_the_listing_that_made_it(auth: AuthStore, ann: str) -> None:
    auth.add_user("bob", Role.VIEWER)
    for number in range(3):
        _token(auth, f"t{number}")
    of_users = auth.list_users(limit=1).next_cursor
    of_ann = auth.list_tokens("ann", limit=1).next_cursor
    assert of_users is not None and of_ann is not None
    with pytest.raises(ValueError, match="was not made by list_tokens"):
        auth.list_tokens(cursor=of_users)
    with pytest.raises(ValueError, match="was not made by list_users"):
        auth.list_users(cursor=of_ann)
    with pytest.raises(ValueError, match="with other arguments"):
        auth.list_tokens("bob", cursor=of_ann)


# the SQL store's own rules (sql_auth): what fits its columns, the same on every backend


@pytest.mark.parametrize(("name", "shown"), [("", "''"), ("u" * 256, repr("u" * 256))])
def test_a_user_name_that_does_not_fit_is_refused(
    auth: AuthStore, name: str, shown: str
) -> None:
    with pytest.raises(ValueError) as raised:
        auth.add_user(name, Role.VIEWER)
    assert str(raised.value) == f"a user name must be 1 to 255 characters, got {shown}"
    assert auth.list_users().items == ()


def test_a_token_id_or_hash_that_does_not_fit_is_refused(auth: AuthStore, ann: str) -> None:
    with pytest.raises(ValueError, match="a token id must be 1 to 64 characters, got ''"):
        auth.add_token("", ann, Role.VIEWER, HASH, "", None)
    with pytest.raises(ValueError, match="a token id must be 1 to 64 characters"):
        auth.add_token("t" * 65, ann, Role.VIEWER, HASH, "", None)
    with pytest.raises(ValueError) as raised:
        auth.add_token("t1", ann, Role.VIEWER, HASH + "0", "", None)
    # the hash is not shown, only its length
    assert str(raised.value) == "a secret hash must be 1 to 64 characters, got 65 characters"
    assert auth.list_tokens().items == ()
    assert auth.add_user("u" * 255, Role.VIEWER).name == "u" * 255
    assert _token(auth, "t" * 64, "u" * 255).token_id == "t" * 64


def test_a_role_that_is_no_role_is_refused(auth: AuthStore, ann: str) -> None:
    with pytest.raises(ValueError, match="'owner' is not a valid Role"):
        auth.add_user("bob", "owner")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'root' is not a valid Role"):
        auth.add_token("t1", ann, "root", HASH, "", None)  # type: ignore[arg-type]
    assert [user.name for user in auth.list_users().items] == ["ann"]

"""``Accounts``: users, namespace members and API tokens of a registry (``Registry.accounts()``).

On a local registry every method acts in its database as the operator, or, given ``as_``
(the ``Principal`` a server authenticated), on that caller's behalf within what their token
holds. Through a server URL the token methods act for the token's own user; users and
namespaces are managed where the server's database is.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from pinbench.errors import UserError

if TYPE_CHECKING:
    from pinbench.accounts import Principal
    from pinbench.db.plain import Rows
    from pinbench.sdk.registry import Registry


class Accounts:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    # -- users and namespaces (local) -----------------------------------------------------

    def users(self) -> list[dict[str, Any]]:
        """Every user: ``name``, ``admin``, ``namespaces``, ``status`` (``active``,
        ``disabled`` or ``deleted``)."""
        from pinbench import accounts

        with self._reads("listing users") as rows:
            return accounts.list_users(rows)

    def add_user(
        self, name: str, *, admin: bool = False, namespaces: Sequence[str] = ()
    ) -> dict[str, Any]:
        """Add a user, a member of ``namespaces`` (all or nothing)."""
        from pinbench import accounts

        with self._writes("adding a user") as rows:
            accounts.add_user(rows, name, admin=admin)
            for ns in namespaces:
                accounts.grant(rows, name, ns)
        return {
            "name": name,
            "admin": admin,
            "namespaces": sorted(namespaces),
            "status": "active",
        }

    def grant(self, user: str, namespace: str) -> dict[str, Any]:
        """Let ``user`` publish in ``namespace`` (created by its first member); the user now."""
        from pinbench import accounts

        with self._writes("granting a namespace") as rows:
            accounts.grant(rows, user, namespace)
            return accounts.user_info(rows, accounts.get_user(rows, user))

    def revoke_membership(self, user: str, namespace: str) -> None:
        """Remove ``user`` from ``namespace``."""
        from pinbench import accounts

        with self._writes("removing a member") as rows:
            accounts.revoke_membership(rows, user, namespace)

    def disable_user(self, name: str) -> str:
        """Refuse every token of ``name`` from now on (checked on every request; their web UI
        sessions end) until ``enable_user``; the user's status before (``active`` or
        ``disabled``). The last enabled admin is refused (``LastAdmin``)."""
        from pinbench import users

        with self._writes("disabling a user") as rows:
            return users.disable_user(rows, name)

    def enable_user(self, name: str) -> str:
        """Let a disabled user's unrevoked tokens work again; the status before."""
        from pinbench import users

        with self._writes("enabling a user") as rows:
            return users.enable_user(rows, name)

    def delete_user(self, name: str) -> int:
        """Delete ``name``: their tokens revoked, their memberships removed; what they
        published and ran stays, attributed by name, and the name is never given again. The
        last enabled admin is refused. The number of tokens revoked."""
        from pinbench import users

        with self._writes("deleting a user") as rows:
            return users.delete_user(rows, name)

    # -- tokens ---------------------------------------------------------------------------

    def create_token(
        self,
        *,
        name: str = "cli",
        scopes: Sequence[str] | None = None,
        user: str | None = None,
        as_: Principal | None = None,
    ) -> dict[str, Any]:
        """A new token (``token``: its secret, shown only now), with ``id``, ``user`` and
        ``scopes``. Locally for ``user`` (default scopes read, publish, run), or for ``as_``'s
        own user within its token's scopes (default: all of them); through a server, for the
        token's user."""
        if self.registry.remote:
            body: dict[str, Any] = {"name": name}
            if scopes:
                body["scopes"] = list(scopes)
            info: dict[str, Any] = self.registry.server().json("POST", "/api/v1/tokens", json=body)
            return info
        from pinbench import accounts, api_tokens

        owner = self._owner(user, as_, "creating a token")
        if scopes is None:
            scopes = sorted(as_.granted) if as_ is not None else list(accounts.DEFAULT_SCOPES)
        with self._writes("creating a token") as rows:
            token_id, granted, text = api_tokens.create_token(
                rows, owner, name=name, scopes=list(scopes), within=as_
            )
        return {"id": token_id, "token": text, "user": owner, "scopes": granted}

    def tokens(
        self, *, user: str | None = None, as_: Principal | None = None
    ) -> list[dict[str, Any]]:
        """A user's tokens (never their secrets): ``id``, ``name``, ``scopes``,
        ``created_at``, ``revoked``."""
        if self.registry.remote:
            return self.registry.server().pages("/api/v1/tokens", {}, lambda t: str(t["id"]))
        from pinbench import api_tokens

        owner = self._owner(user, as_, "listing tokens")
        with self._reads("listing tokens") as read:
            return api_tokens.list_tokens(read, owner)

    def revoke_token(self, token_id: str, *, as_: Principal | None = None) -> None:
        """Revoke a token: requests with it are refused from now on. ``as_`` must own it or
        be an admin."""
        if self.registry.remote:
            self.registry.server().call("DELETE", f"/api/v1/tokens/{token_id}")
            return
        from pinbench import accounts, api_tokens

        if as_ is not None and as_.user is None:
            raise accounts.AuthError("revoking a token needs a token (Authorization: Bearer)")
        with self._writes("revoking a token") as rows:
            api_tokens.revoke_token(rows, token_id, by=as_)

    # -- helpers --------------------------------------------------------------------------

    def _reads(self, operation: str) -> AbstractContextManager[Rows]:
        return self.registry._local(operation).reads()

    def _writes(self, operation: str) -> AbstractContextManager[Rows]:
        return self.registry._local(operation).writes()

    @staticmethod
    def _owner(user: str | None, as_: Principal | None, what: str) -> str:
        if as_ is not None:
            if as_.user is None:
                from pinbench.accounts import AuthError

                raise AuthError(f"{what} needs a token (Authorization: Bearer)")
            return as_.user
        if user is None:
            raise UserError("--user NAME is needed without PINBENCH_URL")
        return user

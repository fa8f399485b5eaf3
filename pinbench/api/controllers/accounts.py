"""Accounts: who am I, my tokens; users and namespace members (admin)."""

from __future__ import annotations

from litestar import Controller, delete, get, post

from pinbench.accounts import AuthError, Forbidden, Principal
from pinbench.api.paging import DEFAULT_LIMIT, After, Limit, described, page_listed
from pinbench.api.schemas import (
    Me,
    MemberRequest,
    NewToken,
    TokenInfo,
    TokenRequest,
    UserInfo,
    UserRequest,
)
from pinbench.sdk.registry import Registry


def _admin(principal: Principal) -> None:
    principal.require("admin")
    if not principal.is_admin:  # an admin scope is only ever issued to admins
        raise Forbidden(f"{principal.user} is not an admin")


class MeController(Controller):
    path = "/api/v1/me"
    tags = ["accounts"]  # noqa: RUF012

    @get("/", summary="Who the token belongs to, its scopes and namespaces")
    async def me(self, principal: Principal) -> Me:
        return Me(
            user=principal.user,
            scopes=sorted(principal.scopes),
            namespaces=sorted(principal.namespaces),
            admin=principal.is_admin,
        )


class TokenController(Controller):
    path = "/api/v1/tokens"
    tags = ["accounts"]  # noqa: RUF012

    @post(
        "/",
        sync_to_thread=True,
        status_code=201,
        summary="Create a token for the caller (shown once; scopes within the caller's token's)",
    )
    def create(self, registry: Registry, principal: Principal, data: TokenRequest) -> NewToken:
        made = registry.accounts().create_token(name=data.name, scopes=data.scopes, as_=principal)
        return NewToken(**made)

    @get(
        "/",
        sync_to_thread=True,
        summary="The caller's tokens (never their secrets), oldest first",
        description=described("tokens", "id"),
    )
    def list_tokens(
        self,
        registry: Registry,
        principal: Principal,
        limit: Limit = DEFAULT_LIMIT,
        after: After = None,
    ) -> list[TokenInfo]:
        tokens = registry.accounts().tokens(as_=principal)
        kept = page_listed(tokens, id_of=lambda t: str(t["id"]), limit=limit, after=after)
        return [TokenInfo(**t) for t in kept]

    @delete("/{token_id:str}", sync_to_thread=True, summary="Revoke a token (own, or any: admin)")
    def revoke(self, registry: Registry, principal: Principal, token_id: str) -> None:
        if principal.user is None:
            raise AuthError("revoking a token needs a token (Authorization: Bearer)")
        registry.accounts().revoke_token(token_id, as_=principal)


class UserController(Controller):
    path = "/api/v1/users"
    tags = ["accounts"]  # noqa: RUF012

    @get(
        "/",
        sync_to_thread=True,
        summary="Users and their namespaces, by name (admin)",
        description=described("users", "name"),
    )
    def list_users(
        self,
        registry: Registry,
        principal: Principal,
        limit: Limit = DEFAULT_LIMIT,
        after: After = None,
    ) -> list[UserInfo]:
        _admin(principal)
        users = registry.accounts().users()
        kept = page_listed(users, id_of=lambda u: str(u["name"]), limit=limit, after=after)
        return [UserInfo(**u) for u in kept]

    @post("/", sync_to_thread=True, status_code=201, summary="Add a user (admin)")
    def add(self, registry: Registry, principal: Principal, data: UserRequest) -> UserInfo:
        _admin(principal)
        added = registry.accounts().add_user(
            data.name, admin=data.admin, namespaces=data.namespaces
        )
        return UserInfo(**added)


class NamespaceController(Controller):
    path = "/api/v1/namespaces"
    tags = ["accounts"]  # noqa: RUF012

    @post(
        "/{namespace:str}/members",
        sync_to_thread=True,
        status_code=201,
        summary="Let a user publish in a namespace (admin)",
    )
    def add_member(
        self, registry: Registry, principal: Principal, namespace: str, data: MemberRequest
    ) -> UserInfo:
        _admin(principal)
        return UserInfo(**registry.accounts().grant(data.user, namespace))

    @delete(
        "/{namespace:str}/members/{user:str}",
        sync_to_thread=True,
        summary="Remove a user from a namespace (admin)",
    )
    def remove_member(
        self, registry: Registry, principal: Principal, namespace: str, user: str
    ) -> None:
        _admin(principal)
        registry.accounts().revoke_membership(user, namespace)

"""Accounts: who am I, my tokens; users and namespace members (admin)."""

from __future__ import annotations

from litestar import Controller, delete, get, post

from pinbench import accounts
from pinbench.accounts import Principal
from pinbench.api.schemas import (
    Me,
    MemberRequest,
    NewToken,
    TokenInfo,
    TokenRequest,
    UserInfo,
    UserRequest,
)
from pinbench.workspace import Workspace


def _admin(principal: Principal) -> None:
    principal.require("admin")
    if not principal.is_admin:  # an admin scope is only ever issued to admins
        raise accounts.Forbidden(f"{principal.user} is not an admin")


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
    def create(self, ws: Workspace, principal: Principal, data: TokenRequest) -> NewToken:
        if principal.user is None:
            raise accounts.AuthError("creating a token needs a token (Authorization: Bearer)")
        scopes = data.scopes if data.scopes is not None else sorted(principal.granted)
        with ws.transaction() as session:
            row, text = accounts.create_token(
                session, principal.user, name=data.name, scopes=scopes, within=principal
            )
            return NewToken(id=row.id, token=text, user=principal.user, scopes=list(row.scopes))

    @get("/", sync_to_thread=True, summary="The caller's tokens (never their secrets)")
    def list_tokens(self, ws: Workspace, principal: Principal) -> list[TokenInfo]:
        if principal.user is None:
            raise accounts.AuthError("listing tokens needs a token (Authorization: Bearer)")
        with ws.transaction() as session:
            return [TokenInfo(**t) for t in accounts.list_tokens(session, principal.user)]

    @delete("/{token_id:str}", sync_to_thread=True, summary="Revoke a token (own, or any: admin)")
    def revoke(self, ws: Workspace, principal: Principal, token_id: str) -> None:
        if principal.user is None:
            raise accounts.AuthError("revoking a token needs a token (Authorization: Bearer)")
        with ws.transaction() as session:
            accounts.revoke_token(session, token_id, by=principal)


class UserController(Controller):
    path = "/api/v1/users"
    tags = ["accounts"]  # noqa: RUF012

    @get("/", sync_to_thread=True, summary="Users and their namespaces (admin)")
    def list_users(self, ws: Workspace, principal: Principal) -> list[UserInfo]:
        _admin(principal)
        with ws.transaction() as session:
            return [UserInfo(**u) for u in accounts.list_users(session)]

    @post("/", sync_to_thread=True, status_code=201, summary="Add a user (admin)")
    def add(self, ws: Workspace, principal: Principal, data: UserRequest) -> UserInfo:
        _admin(principal)
        with ws.transaction() as session:
            accounts.add_user(session, data.name, admin=data.admin)
            for ns in data.namespaces:
                accounts.grant(session, data.name, ns)
        return UserInfo(name=data.name, admin=data.admin, namespaces=sorted(data.namespaces))


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
        self, ws: Workspace, principal: Principal, namespace: str, data: MemberRequest
    ) -> UserInfo:
        _admin(principal)
        with ws.transaction() as session:
            accounts.grant(session, data.user, namespace)
            user = accounts.get_user(session, data.user)
            return UserInfo(
                name=user.name,
                admin=user.is_admin,
                namespaces=accounts.namespaces_of(session, user),
            )

    @delete(
        "/{namespace:str}/members/{user:str}",
        sync_to_thread=True,
        summary="Remove a user from a namespace (admin)",
    )
    def remove_member(self, ws: Workspace, principal: Principal, namespace: str, user: str) -> None:
        _admin(principal)
        with ws.transaction() as session:
            accounts.revoke_membership(session, user, namespace)

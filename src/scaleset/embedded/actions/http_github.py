"""GitHub REST side of the fake, GHES-style under ``/api/v3`` (spec §1.2-§1.4, public REST API).

Installation access tokens for GitHub Apps, registration tokens per scope, the
``/actions/runner-registration`` exchange that yields the Actions-service URL and admin JWT, and
the paginated self-hosted runners list of an organization, repository or enterprise.
"""

from __future__ import annotations

from urllib.parse import urlencode

from scaleset.embedded.actions.context import FakeContext
from scaleset.embedded.actions.errors import GitHubApiError
from scaleset.embedded.actions.faults import Surface
from scaleset.embedded.actions.model import Scope, ScopeKind, parse_config_url
from scaleset.embedded.actions.routing import Call, Reply, Router
from scaleset.embedded.actions.wire import rest_runner_json, rfc3339

API = "/api/v3"
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100


def _scope_from_params(call: Call) -> Scope:
    params = call.params
    if "enterprise" in params:
        return Scope(ScopeKind.ENTERPRISE, params["enterprise"])
    if "repo" in params:
        return Scope(ScopeKind.REPOSITORY, params["owner"], params["repo"])
    return Scope(ScopeKind.ORGANIZATION, params["org"])


def _positive_int(call: Call, name: str, default: int) -> int:
    raw = call.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise GitHubApiError(400, f"Invalid value for {name}") from None
    if value < 1:
        raise GitHubApiError(400, f"Invalid value for {name}")
    return value


class GitHubApi:
    def __init__(self, context: FakeContext) -> None:
        self._ctx = context
        self._label_ids: dict[str, int] = {}

    def register(self, router: Router) -> None:
        add = router.add
        github = Surface.GITHUB
        add("POST", API + "/app/installations/{installation}/access_tokens", self.app_token, github)
        for prefix in (
            API + "/orgs/{org}",
            API + "/repos/{owner}/{repo}",
            API + "/enterprises/{enterprise}",
        ):
            add("POST", prefix + "/actions/runners/registration-token", self.reg_token, github)
            add("GET", prefix + "/actions/runners", self.list_runners, github)
        add("POST", API + "/actions/runner-registration", self.runner_registration, github)

    async def app_token(self, call: Call) -> Reply:
        try:
            installation_id = int(call.params["installation"])
        except ValueError:
            raise GitHubApiError(404, "Not Found") from None
        authorization = call.header("Authorization") or ""
        scheme, _, app_jwt = authorization.partition(" ")
        if scheme.lower() != "bearer" or not app_jwt.strip():
            raise GitHubApiError(401, "A JSON web token could not be decoded")
        token, expires_at = self._ctx.authority.installation_token(installation_id, app_jwt.strip())
        return Reply.of(
            201,
            {
                "token": token,
                "expires_at": rfc3339(expires_at),
                "permissions": {"organization_self_hosted_runners": "write"},
                "repository_selection": "all",
            },
        )

    async def reg_token(self, call: Call) -> Reply:
        scope = _scope_from_params(call)
        self._ctx.authority.authorize_github(call.header("Authorization"), scope)
        token, expires_at = self._ctx.authority.registration_token(scope)
        return Reply.of(201, {"token": token, "expires_at": rfc3339(expires_at)})

    async def runner_registration(self, call: Call) -> Reply:
        body = await call.json()
        url = body.get("url") if isinstance(body, dict) else None
        if not isinstance(url, str) or not url:
            raise GitHubApiError(400, "url is required")
        try:
            scope = parse_config_url(url)
        except ValueError as error:
            raise GitHubApiError(400, str(error)) from None
        self._ctx.authority.check_registration_token(call.header("Authorization"), scope)
        tenant = self._ctx.service.tenant_for_scope(scope)
        return Reply.of(
            201,
            {
                "url": self._ctx.tenant_url(tenant.id),
                "token": self._ctx.authority.admin_token(tenant.id),
                "token_schema": "OAuthAccessToken",
            },
        )

    async def list_runners(self, call: Call) -> Reply:
        scope = _scope_from_params(call)
        self._ctx.authority.authorize_github(call.header("Authorization"), scope)
        per_page = min(_positive_int(call, "per_page", DEFAULT_PER_PAGE), MAX_PER_PAGE)
        page = _positive_int(call, "page", 1)
        service = self._ctx.service
        tenant = service.find_tenant(scope)
        runners = [] if tenant is None else service.live_runners(tenant.id)
        name = call.query.get("name")
        if name:
            runners = [r for r in runners if r.name == name]
        chunk = runners[(page - 1) * per_page : page * per_page]
        listed = []
        for runner in chunk:
            scale_set = service.scale_sets.get(runner.scale_set_id)
            group_id = scale_set.runner_group_id if scale_set is not None else 1
            for label in scale_set.labels if scale_set is not None else []:
                self._label_ids.setdefault(label.name.casefold(), len(self._label_ids) + 1)
            listed.append(rest_runner_json(runner, scale_set, group_id, self._label_ids))
        reply = Reply.of(200, {"total_count": len(runners), "runners": listed})
        link = self._link_header(call, page, per_page, len(runners))
        if link:
            reply.headers["Link"] = link
        return reply

    def _link_header(self, call: Call, page: int, per_page: int, total: int) -> str:
        """RFC 8288 ``Link`` header with next/last/first/prev, as GitHub paginates."""
        last = max(1, -(-total // per_page))
        base = f"{self._ctx.base_url}{call.path}"
        extra = [(k, v) for k, v in call.query.items() if k not in ("page", "per_page")]

        def url(target: int) -> str:
            return f"{base}?{urlencode([*extra, ('per_page', per_page), ('page', target)])}"

        links = []
        if page < last:
            links.append(f'<{url(page + 1)}>; rel="next"')
            links.append(f'<{url(last)}>; rel="last"')
        if page > 1:
            links.append(f'<{url(1)}>; rel="first"')
            links.append(f'<{url(min(page - 1, last))}>; rel="prev"')
        return ", ".join(links)

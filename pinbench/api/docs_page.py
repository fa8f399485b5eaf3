"""The API's docs page (Swagger UI) without inline script or style, so that it runs under the
server's Content-Security-Policy: the page loads the vendored bundle, then
``static/swagger-init.js``, which fetches the OpenAPI document by URL."""

from __future__ import annotations

from html import escape
from typing import Any

from litestar import Request, Router
from litestar.openapi.plugins import SwaggerRenderPlugin


class SwaggerPage(SwaggerRenderPlugin):
    def __init__(self, *, static: str, openapi_json: str) -> None:
        super().__init__(
            js_url=f"{static}/swagger-ui/swagger-ui-bundle.js",
            css_url=f"{static}/swagger-ui/swagger-ui.css",
            standalone_preset_js_url=f"{static}/swagger-ui/swagger-ui-standalone-preset.js",
            favicon=f'<link rel="icon" href="{static}/swagger-ui/favicon-32x32.png">',
        )
        self.static = static
        self.openapi_json = openapi_json

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        title = escape(str(openapi_schema["info"]["title"]))
        return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} API</title>
{self.favicon}
<link rel="stylesheet" href="{self.css_url}">
<link rel="stylesheet" href="{self.static}/swagger-page.css">
</head>
<body>
<div id="swagger-container" data-url="{escape(self.openapi_json)}"></div>
<script src="{self.js_url}"></script>
<script src="{self.standalone_preset_js_url}"></script>
<script src="{self.static}/swagger-init.js"></script>
</body>
</html>
""".encode()

    def receive_router(self, router: Router) -> None:
        """No ``oauth2-redirect.html`` page: the API's tokens are bearer tokens, not OAuth2."""

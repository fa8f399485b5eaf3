// The docs page's Swagger UI, started from a file (the page's Content-Security-Policy allows
// no inline script). The OpenAPI document's address is the container's data-url.
(function () {
  var container = document.getElementById("swagger-container");
  window.ui = SwaggerUIBundle({
    url: container.dataset.url,
    dom_id: "#swagger-container",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  });
})();

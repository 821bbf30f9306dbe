// The /docs page's start: Swagger UI on the document of the server that
// served the page (a file, not an inline script: the page's
// Content-Security-Policy runs only this server's files).
"use strict";
// The document lists the default local address as its server; "try it out"
// must reach the server that served this page instead, wherever it runs.
(function () {
  const specUrl = new URL("openapi.json", window.location.href);
  const here = new URL(".", specUrl).href.replace(/\/$/, "");
  fetch(specUrl)
    .then((response) => {
      if (!response.ok) throw new Error(`GET ${specUrl} answered ${response.status}`);
      return response.json();
    })
    .then((spec) => {
      spec.servers = [{ url: here, description: "This server" }];
      window.ui = SwaggerUIBundle({
        spec,
        dom_id: "#swagger-ui",
        layout: "BaseLayout",
        presets: [SwaggerUIBundle.presets.apis],
        deepLinking: true,
        displayOperationId: true,
        displayRequestDuration: true,
        // Open for editing at once: these operations are the point of the page.
        tryItOutEnabled: true,
        // Show minimum, maximum, lengths and patterns of parameters.
        showCommonExtensions: true,
        showExtensions: true,
        filter: true,
        defaultModelsExpandDepth: 1,
        defaultModelExpandDepth: 3,
        // The page never asks a public validator about the document.
        validatorUrl: null,
      });
    })
    .catch((error) => {
      const failure = document.createElement("p");
      failure.id = "failure";
      failure.textContent = `The API description could not be loaded: ${error.message}`;
      document.body.prepend(failure);
    });
})();

"""The web UI served by ``pinbench serve`` under ``/ui``: server-rendered pages (Jinja), the
plots drawn by the vendored Vega-Lite scripts; nothing is loaded from another site."""

"""The console: server-rendered pages at ``/console/`` for the federation's administrators and
member clouds' staff, signed in with a session cookie (never the token itself).

- :mod:`broker.console.models`: the sessions table.
- :mod:`broker.console.sessions`: open, resume (idle and absolute expiry) and close a session.
- :mod:`broker.web.console`: the request side (cookie, CSRF, security headers, rendering).
- :mod:`broker.console.router`: the pages; each calls the services the API routes call, with the
  same caller, so a person sees what the API would show them.

Explained in ``docs/guides/console.md``.
"""

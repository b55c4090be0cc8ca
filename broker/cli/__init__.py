"""The ``fedbroker`` command line, one module per command.

:mod:`broker.cli.app` holds :func:`main` (the entry point; errors become one line and an exit
status) and assembles the parser; :mod:`broker.cli.common` what several commands share; each
command (``analyze``, ``anonymize``, ``release``, ``serve``, ``db``, ``audit``, ``admins``,
``keys``) adds its own sub-parser and handler; :mod:`broker.cli.render` holds the text tables and
:mod:`broker.cli.verdict` the verdict a report leads with and the ``--fail-if`` conditions.

Explained in ``docs/guides/data-stewards.md``.
"""

from broker.cli.app import main

__all__ = ["main"]

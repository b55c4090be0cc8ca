"""Griffe extension: Sphinx roles in docstrings shown as code in the Python API pages.

The docstrings name other objects the Sphinx way (``:func:`report_of```,
``:mod:`broker.columns.missing```)
so that they read well in ``help()``; Markdown has no such roles and would print them as they are.
Each becomes a code span (``report_of``): the name stays, the role's punctuation goes.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

ROLE = re.compile(r":(?:mod|func|class|meth|data|attr|exc|obj|const):`~?([^`]+)`")


class SphinxRoles(Extension):
    def on_instance(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(r"`\1`", obj.docstring.value)

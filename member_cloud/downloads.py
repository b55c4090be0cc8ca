"""Serving stored bytes (a dataset, a delivery) so that no browser runs them on this origin.

Whatever a file claims to be, it is served as an attachment (``Content-Disposition``), with
``X-Content-Type-Options: nosniff`` and a sandboxing ``Content-Security-Policy``, under a file
name without separators or control characters, and as one of :data:`SAFE_MEDIA_TYPES` (data
formats no browser renders as a page), else as ``application/octet-stream``: a source chooses
the type of what it sends, so it is never trusted to render.
"""

from __future__ import annotations

import mimetypes
import pathlib
from urllib.parse import quote

from fastapi.responses import FileResponse

mimetypes.add_type("application/vnd.apache.parquet", ".parquet")

# The only types a download is served as: data formats no browser renders as a page.
SAFE_MEDIA_TYPES = {
    "text/csv": ".csv",
    "application/json": ".json",
    "application/vnd.apache.parquet": ".parquet",
    "application/zip": ".zip",
}
OCTET_STREAM = "application/octet-stream"
DOWNLOAD_RESPONSE = {
    200: {
        "content": {media: {} for media in [*SAFE_MEDIA_TYPES, OCTET_STREAM]},
        "description": "The bytes, always as an attachment (`Content-Disposition: attachment`), "
        "with `X-Content-Type-Options: nosniff`, as one of the types listed here: any other "
        "type is served as application/octet-stream",
    }
}


def media_type(filename: str) -> str:
    return mimetypes.guess_type(filename)[0] or OCTET_STREAM


def safe_media_type(declared: str | None) -> str:
    """``declared`` when it is one of the data types of the allowlist (parameters dropped),
    else application/octet-stream: whatever a source says, nothing is served as HTML, SVG or
    script on this member's origin."""
    essence = (declared or "").split(";", 1)[0].strip().lower()
    return essence if essence in SAFE_MEDIA_TYPES else OCTET_STREAM


def download(path: pathlib.Path, declared_type: str | None, filename: str) -> FileResponse:
    """The file as an attachment, under ``filename``, with a type from the allowlist."""
    content_type = safe_media_type(declared_type)
    # no separator or control character in the name a browser saves the file under
    name = "".join("_" if c in "/\\" or ord(c) < 32 or ord(c) == 127 else c for c in filename)
    name = name.strip().lstrip(".") or "download" + SAFE_MEDIA_TYPES.get(content_type, "")
    response = FileResponse(path)
    response.headers["Content-Type"] = content_type  # set here: FileResponse adds a charset
    response.headers["Content-Disposition"] = f"attachment; filename*=UTF-8''{quote(name, safe='')}"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response

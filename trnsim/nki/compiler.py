"""``nki.compiler``: directives to the NKI compiler (placeholder filled in the next commit)."""
from __future__ import annotations

"""Placeholder: filled below."""
from __future__ import annotations

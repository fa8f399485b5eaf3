"""The declarative base every table model derives from (``models``, ``study_models``)."""

from __future__ import annotations

from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    pass

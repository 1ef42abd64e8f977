"""Privacy budgets and exact accounting."""

from dpreg.privacy.budgets import ApproxDP, Budget, ZCDP

__all__ = ["ApproxDP", "Budget", "ZCDP"]

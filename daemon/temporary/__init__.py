"""Managed temporary helpers (seeds/000): each thread's private directory for the throwaway
scripts and data files its agents write (`directory`), the /proc check of what its
processes still use (`activity`), and listing, budgets and safe release (`service`).
"""

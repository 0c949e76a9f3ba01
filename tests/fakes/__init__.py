"""Test doubles shared by the CPU tests (fake servers)."""

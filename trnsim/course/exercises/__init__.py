"""Checkers for the course's introductory exercises (notebooks 00 and 08)."""

"""Tests of the remote halves."""

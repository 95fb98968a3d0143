"""Ingest: turning files, URLs and text into documents and chunks (heavy converters load on first use)."""

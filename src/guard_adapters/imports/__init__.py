"""Importing the repository's modules at the base and now, to compare what their import builds."""

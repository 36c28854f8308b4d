"""The command line: `python -m albert_core params|flops|memory|verify` (main.py; measure.py for verify and memory).
"""

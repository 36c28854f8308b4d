"""The process plumbing of Verify: torch runs only in a build process, never in the one that asks.

parent_*: in the process that asks (the Streamlit server, or the CLI): parent_plan.py (what a request may do within
the memory there, before anything starts; no torch), parent_queue.py (the Runner: one build at a time),
parent_warm.py (its end of the warm measurement process), parent_served_again.py (results served again),
parent_memory.py (the memory the server has, as the kernel counts it).
child_*: in a build process: child_request.py (one request: `python -m albert_core.processes.child_request`, and
answer(), the one place a request's JSON is read and its answer's written), child_warm.py (the warm measurement
process: `python -m albert_core.processes.child_warm`).
limits.py: a process's caps and resident sizes (/proc, prctl), read on both sides.
"""

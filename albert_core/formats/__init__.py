"""Formats and I/O: Hugging Face config.json (hf.py), the Hub (hub.py), uploads (upload.py), and the URL of a shared
view (share.py). No torch.
"""

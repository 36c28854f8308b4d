"""Streamlit glue shared by the pages: session store, sidebar, page controls, URL sync, tables and downloads."""

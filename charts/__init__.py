"""Plotly figures for the explorer. Pure: tidy DataFrames in, go.Figure out; never calls Streamlit."""

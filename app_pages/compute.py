import streamlit as st

st.title("compute")
st.info("Coming soon.")

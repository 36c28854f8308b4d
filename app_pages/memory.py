import streamlit as st

st.title("memory")
st.info("Coming soon.")

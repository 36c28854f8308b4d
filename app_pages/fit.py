import streamlit as st

st.title("fit")
st.info("Coming soon.")

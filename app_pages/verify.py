import streamlit as st

st.title("verify")
st.info("Coming soon.")

"""Streamlit-side helpers: state binding, the shared sidebar, chart drawing. No rules here."""

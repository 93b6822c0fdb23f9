"""AppTests of the Streamlit app and its pages (no browser)."""

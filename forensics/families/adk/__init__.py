"""Google ADK: event normalisation (normalize.py, queries/families/adk/), schema V0 rows
and their pickled actions (v0.py, v0_pickle.py), and the window rules (windows.py)."""

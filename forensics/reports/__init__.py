"""Reports to share: typed contexts built from the api's frames (incident.py), charts
(charts.py) and rendering with autoescaped templates from the top-level reports/ folder
(render.py)."""

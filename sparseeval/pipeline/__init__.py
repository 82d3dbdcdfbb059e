"""Pipeline library: settings, sources, the store, artifacts, recipes, drift, publishing, reports.

Knows nothing of Prefect (the `flows`/`tasks` layer wires it); imports `consume` and `method`.
"""

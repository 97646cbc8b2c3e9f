"""Views: anywidget classes that render Trees and Ensembles in notebooks.

The widgets live in their own modules (``cct``) so that importing the model
does not need the front-end bundle; :mod:`lod` and :mod:`source` are pure.
"""

"""The views cctviz ships, by kind: a table with no imports, so that the command
line can offer them without loading a widget.

>>> list(BUILT_IN_VIEWS)
['cct', 'sankey', 'profiles', 'timeline']
"""

#: the views cctviz ships: kind -> module (imported on demand: the model needs no bundle)
BUILT_IN_VIEWS = {
    "cct": "cctviz.views.cct",
    "sankey": "cctviz.views.sankey",
    "profiles": "cctviz.views.profiles",
    "timeline": "cctviz.views.timeline",
}

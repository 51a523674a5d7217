"""Shape ops: views and the ops that rearrange, repeat or reshape elements.

Views, reshaping, copies, casts, joins and splits (``views``), dims and elements rearranged (``reshaping``,
``reorderings``), ``as_strided`` (``strided``), diagonals (``diagonals``), repetition (``repetition``),
grids and broadcasting (``grids``) and the ``*_copy`` forms of the views (``view_copies``).

A family because its ops compute no values: only shapes, strides and which element goes where.
"""

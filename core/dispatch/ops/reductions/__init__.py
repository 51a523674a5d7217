"""Reductions: ops that fold a dim (or every dim) of their input.

The basic reductions (``reduction``) and those built on them (``nan_reductions``), order statistics and
quantiles (``order_statistics``, ``quantiles``), scans (``scans``), statistics on samples (``statistics``)
and counting into bins (``histograms``, with its ONNX lowerings in ``histogram_onnx``).

A family because its ops share ``dim``/``keepdim`` metas, NumPy references and derivatives: ``_shared``
holds those the modules use from one another.
"""

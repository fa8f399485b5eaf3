"""Object detection: box formats and the geometry of pre-processing (``boxes``), non-maximum
suppression (``nms``), packed detector outputs (``layouts``), the check that decoded boxes can
be boxes at all (``plausible``) and COCO's twelve statistics (``stats``) with pycocotools
(``coco``). NumPy only at module level; pycocotools is imported where it is used.

Coordinates are continuous pixel coordinates: pixel ``(i, j)`` covers ``[j, j + 1) x [i, i + 1)``,
so an image ``W`` pixels wide spans ``[0, W]`` and a resize from ``w`` to ``W`` maps ``x`` to
``x * W / w`` (Pillow's and OpenCV's convention for box geometry). A box in pixel ``xyxy`` is
``(x1, y1, x2, y2)`` with ``x1 <= x2``, ``y1 <= y2``; COCO's ``bbox`` is ``(x, y, w, h)``.
"""

"""Semantic segmentation: a dataset's masks read and checked (``masks``, ``truth``), a model's
output read into one class per pixel (``classes``), that class map brought back onto the
original image through the input's geometry (``geometry``), and mIoU and pixel accuracy from a
confusion matrix accumulated over the whole dataset (``metrics``); ``score`` ties them to a run.
NumPy and Pillow only.

A class map holds class indexes ``0..classes-1``; ``NO_CLASS`` (-1) marks an original pixel
the model never saw (a crop cut it away): it counts, and it is wrong.
"""

"""Descriptions, for ``schema_docs``, of the fields that run quantized TensorFlow Lite models
(issue 65, decision 280): the ``Quantization`` section and the ``quantization`` field that joins
``Input``'s and ``Output``'s own."""

from __future__ import annotations

QUANTIZATION_DOCS: dict[str, dict[str, str]] = {
    "Quantization": {
        "scale": "The tensor's scale as the .tflite file records it (a positive normal "
        "float32; written as `pinbench manifest model` reads it): real = (q - zero_point) * "
        "scale. Must equal the file's, else the run is refused naming both.",
        "zero_point": "The tensor's zero point as the file records it; must equal the file's.",
    },
}
INPUT_QUANTIZATION: dict[str, str] = {
    "quantization": "For a TensorFlow Lite input of int8/uint8 with a scale and zero point: "
    "the file's own, declared; the float32 values the steps make are quantized as "
    "round(x / scale + zero_point) (half to even, in float64), clipped to the integer type's "
    "range. Required for such an input (a run refuses it undeclared), refused for any other "
    "input and any other format. Left out of the stored manifest while unset.",
}
OUTPUT_QUANTIZATION: dict[str, str] = {
    "quantization": "For a TensorFlow Lite output of int8/uint8 with a scale and zero point: "
    "the file's own, declared; its integers are dequantized as (q - zero_point) * scale in "
    "float32 before any step or task reads them. Required for such an output when read, "
    "refused for any other. Left out of the stored manifest while unset.",
}

"""LLM engines (``pip install 'pinbench[engines]'``): ONNX Runtime GenAI (``ort_genai``),
CTranslate2 (``ctranslate2``) and OpenVINO GenAI (``openvino_genai``), a module each as every
framework has.

An engine only generates text (``worker.generation``: ``ort_genai_generator``,
``ct2_generator``); its predictor gives the installed engine's version and refuses any other
task, naming it (``predictor``)."""

"""LLM engines (``pip install 'pinbench[engines]'``): ONNX Runtime GenAI (``ort_genai``),
CTranslate2 (``ctranslate2``), OpenVINO GenAI (``openvino_genai``) and llama.cpp through
llama-cpp-python (``llama_cpp``: a wheel pinbench builds from its source archive,
``environments.source_builds``), a module each as every framework has.

An engine only generates text (``worker.generation``: ``ort_genai_generator``,
``ct2_generator``, ``ov_generator``, ``llama_cpp_generator``); its predictor gives the
installed engine's version and refuses any other task, naming it (``predictor``)."""

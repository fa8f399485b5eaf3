"""Extractive question answering (task ``question-answering``, decision 283): SQuAD v1.1's exact
match and F1 as MLPerf Inference's BERT benchmark scores them. Each question and its context
become features (``worker.qa_features``), the model gives each feature's start and end
logits, the host picks each question's answer over its features (``spans``) and scores it
against the question's answers (``truth``) as SQuAD v1.1's evaluation script does (``squad``)."""

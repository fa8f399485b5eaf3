"""Speaker verification (task ``speaker-verification``, decision 282): every sample file
embedded by the model, each trial (an enrolment file, a test file, whether one speaker spoke
both) scored by the cosine similarity of the two embeddings, and the scores judged by the
equal error rate and the minimum detection cost (``trials``, ``metrics``)."""

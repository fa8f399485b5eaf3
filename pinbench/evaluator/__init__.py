"""The evaluator: predictors per framework, the pre/post-processing pipeline, scenarios, runs."""

"""Text generation runs: a causal language model answers prompts token by token, timed per
token through LoadGen's token API (TTFT, TPOT, tokens/s), scored against references."""

"""Text generation: prompts answered token by token, scored against references."""

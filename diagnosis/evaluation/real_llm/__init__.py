"""Running the llm engine against a real local model (not part of the test suite)."""

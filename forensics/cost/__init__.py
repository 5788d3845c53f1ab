"""Cost: prices (genai-prices and a user's dated overrides) and billed cost (docs/cost.md)."""

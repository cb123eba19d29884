"""Bottom layer: writing files safely. Imports nothing of the package."""

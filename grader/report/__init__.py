"""Report formats: each module reads the result model and writes one format."""

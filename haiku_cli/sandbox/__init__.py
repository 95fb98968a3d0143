"""Running model-written programs over the selected databases' documents, isolated and limited."""

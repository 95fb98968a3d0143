"""`haiku eval`: retrieval and answer quality measured on the user's own judged questions."""

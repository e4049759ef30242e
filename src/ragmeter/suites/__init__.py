"""One package per benchmark family: data loading, prompts, response parsing, scoring."""
